//! The wire side of TSIG (RFC 8945): what a request says (its question,
//! opcode and TSIG record, read in place without decoding the message),
//! the MAC over a message's bytes as they are, and the TSIG record
//! appended to a reply.

use ring::hmac;

use crate::query::request::walk::{skip_name, Records, Section};

/// TYPE of a TSIG record, and CLASS ANY it is written in.
pub const TSIG: u16 = 250;
const ANY: u16 = 255;

/// A domain name in its lowercase, uncompressed wire form (at most 255
/// bytes, RFC 1035 §3.1): kept on the stack.
#[derive(Clone, Copy)]
pub struct WireName {
    buf: [u8; 255],
    len: u8,
}

impl WireName {
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }

    /// The name at `at` in `msg` (pointers followed) and the offset just
    /// past it where it is written; `None` when it is malformed.
    pub fn read(msg: &[u8], mut at: usize) -> Option<(WireName, usize)> {
        let mut name = WireName { buf: [0; 255], len: 0 };
        let (mut next, mut hops, mut n) = (None, 0, 0usize);
        loop {
            let len = *msg.get(at)?;
            match len {
                0 => {
                    *name.buf.get_mut(n)? = 0;
                    name.len = u8::try_from(n + 1).ok()?;
                    return Some((name, next.unwrap_or(at + 1)));
                }
                l if l & 0xC0 == 0xC0 => {
                    hops += 1;
                    if hops > 64 {
                        return None;
                    }
                    next.get_or_insert(at + 2);
                    at = usize::from(u16::from_be_bytes([l & 0x3F, *msg.get(at + 1)?]));
                }
                l if l & 0xC0 == 0 => {
                    let label = msg.get(at + 1..at + 1 + usize::from(l))?;
                    let room = name.buf.get_mut(n..n + 1 + label.len())?;
                    room[0] = l;
                    for (to, from) in room[1..].iter_mut().zip(label) {
                        *to = from.to_ascii_lowercase();
                    }
                    (n, at) = (n + 1 + label.len(), at + 1 + label.len());
                }
                _ => return None,
            }
        }
    }

    /// Whether this name is `zone` or under it (both lowercase wire).
    pub fn under(&self, zone: &[u8]) -> bool {
        let name = self.bytes();
        let mut at = 0;
        while at < name.len() {
            if &name[at..] == zone {
                return true;
            }
            at += usize::from(name[at]) + 1;
        }
        false
    }
}

/// The TSIG record ending a message.
pub struct Record {
    /// Where the record starts: the message it signs ends here.
    pub start: usize,
    pub key: WireName,
    pub algorithm: WireName,
    pub time: u64,
    pub fudge: u16,
    pub mac: std::ops::Range<usize>,
    pub original_id: u16,
    pub error: u16,
    pub other: std::ops::Range<usize>,
}

/// What the `tsig` plugin reads of a request.
pub struct Request {
    pub qname: WireName,
    pub qtype: u16,
    pub opcode: u8,
    /// The TSIG record: `Ok(None)` unsigned, `Err` a TSIG record that is
    /// malformed, not the last record, or not in the additional section.
    pub tsig: Result<Option<Record>, ()>,
}

impl Request {
    /// `None`: not a request the header rules let through (short, or a
    /// question that cannot be read); the usual path answers it.
    pub fn of(msg: &[u8]) -> Option<Request> {
        let header = msg.get(..12)?;
        let opcode = (header[2] >> 3) & 0x0F;
        let questions = u16::from_be_bytes([header[4], header[5]]);
        let (mut qname, mut qtype) = (WireName { buf: [0; 255], len: 1 }, 0);
        let mut at = 12;
        for i in 0..questions {
            if i == 0 {
                let (name, end) = WireName::read(msg, at)?;
                let t = msg.get(end..end + 2)?;
                (qname, qtype) = (name, u16::from_be_bytes([t[0], t[1]]));
            }
            at = skip_name(msg, at)? + 4;
        }
        let tsig = tsig(msg, at);
        Some(Request {
            qname,
            qtype,
            opcode,
            tsig,
        })
    }
}

/// The TSIG record of `msg`, whose records start at `at`. A message whose
/// records do not fit reads as unsigned.
fn tsig(msg: &[u8], mut at: usize) -> Result<Option<Record>, ()> {
    let Some(mut records) = Records::of(msg) else {
        return Ok(None);
    };
    let total: usize = [6, 8, 10]
        .iter()
        .map(|&i| usize::from(u16::from_be_bytes([msg[i], msg[i + 1]])))
        .sum();
    let mut found = None;
    for rr in records.by_ref() {
        if rr.rtype == TSIG {
            let last = rr.index + 1 == total && rr.section == Section::Additional && rr.end == msg.len();
            found = Some(if last {
                record(msg, at, rr.rdata, rr.end).ok_or(())?
            } else {
                return Err(());
            });
        }
        at = rr.end;
    }
    match records.end() {
        Some(_) => Ok(found),
        None => Ok(None),
    }
}

/// Reads a TSIG record's owner and RDATA.
fn record(msg: &[u8], start: usize, rdata: usize, end: usize) -> Option<Record> {
    let (key, _) = WireName::read(msg, start)?;
    let (algorithm, at) = WireName::read(msg, rdata)?;
    let u16_at = |i: usize| msg.get(i..i + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let t = msg.get(at..at + 6)?;
    let time = t.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
    let fudge = u16_at(at + 6)?;
    let mac_len = usize::from(u16_at(at + 8)?);
    let mac = at + 10..at + 10 + mac_len;
    let original_id = u16_at(mac.end)?;
    let error = u16_at(mac.end + 2)?;
    let other_len = usize::from(u16_at(mac.end + 4)?);
    let other = mac.end + 6..mac.end + 6 + other_len;
    (other.end == end).then_some(Record {
        start,
        key,
        algorithm,
        time,
        fudge,
        mac,
        original_id,
        error,
        other,
    })
}

/// The TSIG variables (RFC 8945 §4.3.3) after the message in the digest.
pub struct Variables<'a> {
    pub key: &'a [u8],
    pub algorithm: &'a [u8],
    pub time: u64,
    pub fudge: u16,
    pub error: u16,
    pub other: &'a [u8],
}

impl Variables<'_> {
    fn feed(&self, ctx: &mut hmac::Context) {
        ctx.update(self.key);
        ctx.update(&ANY.to_be_bytes());
        ctx.update(&[0, 0, 0, 0]);
        ctx.update(self.algorithm);
        ctx.update(&self.time.to_be_bytes()[2..]);
        ctx.update(&self.fudge.to_be_bytes());
        ctx.update(&self.error.to_be_bytes());
        ctx.update(&u16::try_from(self.other.len()).unwrap_or(0).to_be_bytes());
        ctx.update(self.other);
    }
}

/// The MAC of `msg` (its first 12 bytes replaced by `header`), after
/// `prior` (the request's MAC, with its length, when signing a reply).
pub fn digest(key: &hmac::Key, prior: Option<&[u8]>, header: &[u8; 12], msg: &[u8], vars: &Variables<'_>) -> hmac::Tag {
    let mut ctx = hmac::Context::with_key(key);
    if let Some(mac) = prior {
        ctx.update(&u16::try_from(mac.len()).unwrap_or(0).to_be_bytes());
        ctx.update(mac);
    }
    ctx.update(header);
    ctx.update(msg.get(12..).unwrap_or_default());
    vars.feed(&mut ctx);
    ctx.sign()
}

/// The MAC of a transfer's message after its first (RFC 8945 §5.3.1):
/// over `prior` (the MAC before, with its length), the message, and only
/// the timers (time signed and fudge).
pub fn digest_timers(key: &hmac::Key, prior: &[u8], header: &[u8; 12], msg: &[u8], time: u64, fudge: u16) -> hmac::Tag {
    let mut ctx = hmac::Context::with_key(key);
    ctx.update(&u16::try_from(prior.len()).unwrap_or(0).to_be_bytes());
    ctx.update(prior);
    ctx.update(header);
    ctx.update(msg.get(12..).unwrap_or_default());
    ctx.update(&time.to_be_bytes()[2..]);
    ctx.update(&fudge.to_be_bytes());
    ctx.sign()
}

/// `msg`'s header with the ID `id` and ARCOUNT `arcount`.
pub fn header(msg: &[u8], id: u16, arcount: u16) -> Option<[u8; 12]> {
    let mut h: [u8; 12] = msg.get(..12)?.try_into().ok()?;
    h[..2].copy_from_slice(&id.to_be_bytes());
    h[10..].copy_from_slice(&arcount.to_be_bytes());
    Some(h)
}

/// Appends the TSIG record of `vars` with `mac` to `out` and counts it in
/// ARCOUNT.
pub fn append(out: &mut Vec<u8>, vars: &Variables<'_>, mac: &[u8], original_id: u16) {
    let Some(arcount) = out.get(10..12).map(|b| u16::from_be_bytes([b[0], b[1]])) else {
        return;
    };
    out[10..12].copy_from_slice(&arcount.wrapping_add(1).to_be_bytes());
    out.extend_from_slice(vars.key);
    out.extend_from_slice(&TSIG.to_be_bytes());
    out.extend_from_slice(&ANY.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    let rdlen = vars.algorithm.len() + 16 + mac.len() + vars.other.len();
    out.extend_from_slice(&u16::try_from(rdlen).unwrap_or(0).to_be_bytes());
    out.extend_from_slice(vars.algorithm);
    out.extend_from_slice(&vars.time.to_be_bytes()[2..]);
    out.extend_from_slice(&vars.fudge.to_be_bytes());
    out.extend_from_slice(&u16::try_from(mac.len()).unwrap_or(0).to_be_bytes());
    out.extend_from_slice(mac);
    out.extend_from_slice(&original_id.to_be_bytes());
    out.extend_from_slice(&vars.error.to_be_bytes());
    out.extend_from_slice(&u16::try_from(vars.other.len()).unwrap_or(0).to_be_bytes());
    out.extend_from_slice(vars.other);
}

/// A reply with no records to `msg`: its header (ID, opcode, RD) with QR
/// and `rcode`, and its question.
pub fn error(msg: &[u8], rcode: u8, out: &mut Vec<u8>) {
    out.clear();
    let Some(h) = msg.get(..12) else { return };
    let questions = u16::from_be_bytes([h[4], h[5]]);
    let mut end = 12;
    for _ in 0..questions.min(1) {
        match skip_name(msg, end) {
            Some(e) if e + 4 <= msg.len() => end = e + 4,
            _ => break,
        }
    }
    let qd = u16::from(end > 12);
    out.extend_from_slice(&h[..2]);
    out.push(0x80 | (h[2] & 0x79));
    out.push(rcode & 0x0F);
    out.extend_from_slice(&qd.to_be_bytes());
    out.extend_from_slice(&[0; 6]);
    out.extend_from_slice(&msg[12..end]);
}

/// The most a UDP reply to `msg` may hold: its OPT record's payload size
/// within 512 and 1232 (as `request::edns::udp_limit`), 512 without one.
pub fn udp_limit(msg: &[u8]) -> usize {
    let opt = Records::of(msg).and_then(|mut r| r.find(|rr| rr.rtype == 41 && rr.section == Section::Additional));
    opt.map_or(512, |rr| usize::from(rr.class).clamp(512, 1232))
}

/// Cuts the reply in `out` to its header and question, TC set.
pub fn truncate(out: &mut Vec<u8>) {
    if out.len() < 12 {
        return;
    }
    let questions = u16::from_be_bytes([out[4], out[5]]);
    let mut end = 12;
    for _ in 0..questions {
        match skip_name(out, end) {
            Some(e) if e + 4 <= out.len() => end = e + 4,
            _ => break,
        }
    }
    out.truncate(end);
    out[2] |= 0x02;
    out[6..12].fill(0);
}
