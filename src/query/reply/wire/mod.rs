//! The one place replies are written ([`write_for`], [`write`]): straight
//! into the output buffer, byte for byte what
//! hickory's encoder writes for the same [`Answer`], without its
//! per-name allocations (a `Vec` of label offsets per name, a copy of
//! every stored compression candidate, the OPT record's option list).
//!
//! Names are compressed exactly as hickory does it, so a reply is the same
//! whichever writer made it (the memo patches the question's spelling
//! into answers that point at it; truncation judges sizes compressed):
//! a name's labels are written whole, then each suffix, longest first, is
//! looked up among the stored candidates (exact bytes, first stored
//! wins) and replaced by a pointer at the first hit; each suffix missed
//! on the way is stored (at most [`CANDIDATES`], while below offset
//! 0x3FFF). RDATA names of CNAME, PTR, NS and SOA are compressed; an SRV
//! target is not (RFC 2782), but its suffixes are stored. After
//! [`names::COMPRESSED_NAMES`] compressed names, names are written whole.
//!
//! [`encode`] takes the record types the query path produces (A, AAAA,
//! CNAME, PTR, NS, SOA, SRV, TXT, HINFO); a reply holding any other type
//! returns `None` and [`hickory`] encodes it with hickory. Name
//! compression is in `names.rs`; what is echoed and the size limits in
//! [`super::echo`] and `request.rs`.

use hickory_proto::rr::{Name, RData, Record};

use super::answer::Answer;
use super::echo::{Echo, OPT_LEN, OUR_PAYLOAD};
use super::nsid;
use crate::query::request::{self, edns::ClientEdns, Triage};

pub mod hickory;
mod names;

pub use names::Unsupported;
use names::{Writer, CANDIDATES};

/// One record as the writer takes it, borrowed: from a hickory [`Record`]
/// ([`encode`]) or straight from the snapshot (the cluster zone's
/// [`Encoder`]s), so both write the same bytes.
pub struct Rec<'a> {
    pub owner: &'a Name,
    pub rtype: u16,
    pub class: u16,
    pub ttl: u32,
    pub data: Data<'a>,
}

/// The RDATA of a [`Rec`].
pub enum Data<'a> {
    V4(std::net::Ipv4Addr),
    V6(std::net::Ipv6Addr),
    /// CNAME, PTR, NS: one compressed name.
    Name(&'a Name),
    Soa(&'a hickory_proto::rr::rdata::SOA),
    /// A zone's SOA from its prebuilt names ([`super::records::soa`]'s
    /// values): the zone, the serial, the TTL (also the minimum).
    ZoneSoa(&'a super::records::Zone, u32, u32),
    Srv(&'a hickory_proto::rr::rdata::SRV),
    Txt(&'a hickory_proto::rr::rdata::TXT),
    Hinfo(&'a hickory_proto::rr::rdata::HINFO),
}

impl<'a> Rec<'a> {
    /// The A or AAAA record of `addr` at `owner` (class IN).
    pub fn address(owner: &'a Name, ttl: u32, addr: std::net::IpAddr) -> Rec<'a> {
        let (rtype, data) = match addr {
            std::net::IpAddr::V4(v4) => (1, Data::V4(v4)),
            std::net::IpAddr::V6(v6) => (28, Data::V6(v6)),
        };
        Rec {
            owner,
            rtype,
            class: 1,
            ttl,
            data,
        }
    }

    /// `zone`'s SOA (class IN), as [`super::reply::soa`] builds it.
    pub fn zone_soa(zone: &'a super::records::Zone, ttl: u32, serial: u32) -> Rec<'a> {
        Rec {
            owner: &zone.name,
            rtype: 6,
            class: 1,
            ttl,
            data: Data::ZoneSoa(zone, serial, ttl),
        }
    }

    /// `record` as the writer takes it; `None` for a type it does not know.
    fn of(record: &'a Record) -> Option<Rec<'a>> {
        let data = match &record.data {
            RData::A(a) => Data::V4(a.0),
            RData::AAAA(a) => Data::V6(a.0),
            RData::CNAME(n) => Data::Name(&n.0),
            RData::PTR(n) => Data::Name(&n.0),
            RData::NS(n) => Data::Name(&n.0),
            RData::SOA(soa) => Data::Soa(soa),
            RData::SRV(srv) => Data::Srv(srv),
            RData::TXT(txt) => Data::Txt(txt),
            RData::HINFO(h) => Data::Hinfo(h),
            _ => return None,
        };
        Some(Rec {
            owner: &record.name,
            rtype: record.record_type().into(),
            class: record.dns_class.into(),
            ttl: record.ttl,
            data,
        })
    }
}

/// The sections records are pushed into, in this order.
pub const ANSWER: usize = 1;
pub const AUTHORITY: usize = 2;
pub const ADDITIONAL: usize = 3;

/// A reply being written: room for the header and the question first,
/// then records pushed section by section ([`ANSWER`], [`AUTHORITY`],
/// [`ADDITIONAL`], in that order), then [`Encoder::finish`] writes OPT and
/// the header. The truncation rules of [`hickory`] apply as each
/// record is pushed.
pub struct Encoder<'o, 'q> {
    w: Writer<'o, 'q>,
    counts: [u16; 4],
    /// Where records must end (the limit less room for OPT).
    room: usize,
    /// A record of this section did not fit: the section is closed.
    full: [bool; 4],
    /// An answer or authority record did not fit: TC, and later sections
    /// are closed too.
    truncated: bool,
}

impl<'o, 'q> Encoder<'o, 'q> {
    /// Clears `out` and writes room for the header and the question;
    /// `ede_len` is the size of the extended error's option, if any.
    pub fn start(out: &'o mut Vec<u8>, echo: &Echo<'q>, ede_len: usize, limit: usize) -> Result<Self, Unsupported> {
        out.clear();
        out.extend_from_slice(&[0; 12]);
        let mut w = Writer {
            out,
            candidates: [0; CANDIDATES],
            stored: 0,
            compressed: 0,
            question: None,
        };
        let mut counts = [0u16; 4];
        if let Some(q) = echo.query {
            w.name(q.name(), true)?;
            w.u16(q.query_type().into());
            w.u16(q.query_class().into());
            counts[0] = 1;
            w.question = Some(q.name()).filter(|n| !n.is_root());
        }
        let room = match echo.edns {
            Some(_) => limit.saturating_sub(OPT_LEN + ede_len),
            None => limit,
        };
        Ok(Encoder {
            w,
            counts,
            room,
            full: [false; 4],
            truncated: false,
        })
    }

    /// Writes `rec` into `section` if it fits; one that does not is cut
    /// off and closes its section (for answer and authority: every
    /// section, with TC).
    pub fn push(&mut self, section: usize, rec: &Rec<'_>) -> Result<(), Unsupported> {
        if self.truncated || self.full[section] {
            return Ok(());
        }
        let start = self.w.out.len();
        self.w.record(rec)?;
        if self.w.out.len() > self.room || self.w.out.len() > usize::from(u16::MAX) {
            self.w.out.truncate(start);
            self.full[section] = true;
            self.truncated = section < ADDITIONAL;
        } else {
            self.counts[section] = self.counts[section].saturating_add(1);
        }
        Ok(())
    }

    /// Writes OPT (when the client sent EDNS) and the header with
    /// `answer`'s flags and rcode. Returns whether the reply is truncated;
    /// `None` when it came out over 65,535 bytes.
    pub fn finish(mut self, echo: &Echo<'_>, answer: &Answer) -> Option<bool> {
        if let Some(client) = echo.edns {
            self.w.opt(client, answer);
            self.counts[3] += 1;
        }
        if self.w.out.len() > usize::from(u16::MAX) {
            return None; // hickory's encoder fails here: let it decide
        }
        let truncated = self.truncated || answer.truncated;
        header(self.w.out, echo, answer, truncated, self.counts);
        Some(truncated)
    }
}

/// Writes the reply for a client on `transport` (its size limit follows
/// from the transport and its EDNS). Returns whether it was truncated.
pub fn write_for(out: &mut Vec<u8>, echo: &Echo<'_>, answer: &Answer, transport: crate::metrics::Transport) -> bool {
    write(
        out,
        echo,
        answer,
        crate::query::request::edns::limit(transport, echo.edns),
    )
}

/// Writes the reply into `out` (cleared first), at most `limit` bytes:
/// straight as bytes (this module) when it holds only the record types
/// that writer knows, else with hickory's encoder (the same bytes).
/// Returns whether it was truncated.
pub fn write(out: &mut Vec<u8>, echo: &Echo<'_>, answer: &Answer, limit: usize) -> bool {
    let truncated =
        encode(out, echo, answer, limit).unwrap_or_else(|| hickory::write_with_hickory(out, echo, answer, limit));
    super::header::patch(out, echo, answer.tags.header.as_deref(), answer.authentic_data);
    truncated
}

/// Writes the reply into `out` (cleared first), at most `limit` bytes,
/// with the same sections, truncation and bytes as hickory's encoder (see
/// [`hickory`]). Returns whether it was truncated; `None` when the
/// answer holds a record this writer does not know (`out` is then junk).
pub fn encode(out: &mut Vec<u8>, echo: &Echo<'_>, answer: &Answer, limit: usize) -> Option<bool> {
    let ede_len = answer.ede.as_ref().map_or(0, |(_, text)| 6 + text.len());
    let options_len = ede_len + nsid::option_len(echo.edns, answer.tags.nsid.as_deref());
    let mut reply = Encoder::start(out, echo, options_len, limit).ok()?;
    let sections = [
        (ANSWER, &answer.answers),
        (AUTHORITY, &answer.authority),
        (ADDITIONAL, &answer.additional),
    ];
    for (section, records) in sections {
        for record in records.iter() {
            reply.push(section, &Rec::of(record)?).ok()?;
        }
    }
    reply.finish(echo, answer)
}

/// The header: the echoed ID, opcode, RD and CD; the answer's flags and
/// rcode (its low bits: the high ones ride in OPT); the counts.
fn header(out: &mut [u8], echo: &Echo<'_>, answer: &Answer, truncated: bool, counts: [u16; 4]) {
    let meta = echo.meta;
    let bit = |on: bool, mask: u8| if on { mask } else { 0 };
    out[..2].copy_from_slice(&meta.id.to_be_bytes());
    out[2] = 0x80
        | ((u8::from(meta.op_code) & 0x0F) << 3)
        | bit(answer.authoritative, 0x04)
        | bit(truncated, 0x02)
        | bit(meta.recursion_desired, 0x01);
    out[3] = bit(answer.recursion_available, 0x80)
        | bit(echo.authentic(answer.authentic_data), 0x20)
        | bit(meta.checking_disabled, 0x10)
        | answer.rcode.low();
    for (i, count) in counts.iter().enumerate() {
        out[4 + 2 * i..6 + 2 * i].copy_from_slice(&count.to_be_bytes());
    }
}

impl Writer<'_, '_> {
    fn u16(&mut self, v: u16) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    fn record(&mut self, rec: &Rec<'_>) -> Result<(), Unsupported> {
        self.name(rec.owner, true)?;
        self.u16(rec.rtype);
        self.u16(rec.class);
        self.u32(rec.ttl);
        let at = self.out.len();
        self.u16(0);
        match &rec.data {
            Data::V4(a) => self.out.extend_from_slice(&a.octets()),
            Data::V6(a) => self.out.extend_from_slice(&a.octets()),
            Data::Name(n) => self.name(n, true)?,
            Data::Soa(soa) => {
                self.name(&soa.mname, true)?;
                self.name(&soa.rname, true)?;
                self.u32(soa.serial);
                for v in [soa.refresh, soa.retry, soa.expire] {
                    self.out.extend_from_slice(&v.to_be_bytes());
                }
                self.u32(soa.minimum);
            }
            Data::ZoneSoa(zone, serial, minimum) => {
                self.name(&zone.ns_host, true)?;
                self.name(&zone.hostmaster, true)?;
                self.u32(*serial);
                for v in super::records::SOA_TIMERS {
                    self.out.extend_from_slice(&v.to_be_bytes());
                }
                self.u32(*minimum);
            }
            Data::Srv(srv) => {
                for v in [srv.priority, srv.weight, srv.port] {
                    self.u16(v);
                }
                self.name(&srv.target, false)?;
            }
            Data::Txt(txt) => {
                for s in txt.txt_data.iter() {
                    self.string(s)?;
                }
            }
            Data::Hinfo(h) => {
                self.string(&h.cpu)?;
                self.string(&h.os)?;
            }
        }
        let len = u16::try_from(self.out.len() - at - 2).map_err(|_| Unsupported)?;
        self.out[at..at + 2].copy_from_slice(&len.to_be_bytes());
        Ok(())
    }

    /// A character-string: its length, then its bytes.
    fn string(&mut self, s: &[u8]) -> Result<(), Unsupported> {
        self.out.push(u8::try_from(s.len()).map_err(|_| Unsupported)?);
        self.out.extend_from_slice(s);
        Ok(())
    }

    /// Our OPT record: payload 1232, version 0, the client's DO bit, the
    /// rcode's high bits, the extended error when there is one, and the
    /// NSID when the client asked for it and the block has `nsid`.
    fn opt(&mut self, client: ClientEdns, answer: &Answer) {
        self.out.push(0);
        self.u16(41);
        self.u16(OUR_PAYLOAD);
        let flags = if client.dnssec_ok { 0x8000 } else { 0 };
        self.u32((u32::from(answer.rcode.high()) << 24) | flags);
        let rdlen = self.out.len();
        self.u16(0);
        if let Some((code, text)) = &answer.ede {
            self.u16(15); // RFC 8914
            self.u16((text.len() + 2) as u16);
            self.u16(*code);
            self.out.extend_from_slice(text.as_bytes());
        }
        if let Some(data) = nsid::option(client, answer.tags.nsid.as_deref()) {
            self.u16(nsid::CODE);
            self.u16(data.len() as u16); // at most nsid::setup::MAX_LEN
            self.out.extend_from_slice(data);
        }
        let len = (self.out.len() - rdlen - 2) as u16;
        self.out[rdlen..rdlen + 2].copy_from_slice(&len.to_be_bytes());
    }
}

/// A SERVFAIL reply to `bytes` in `out`; false when it cannot be answered.
pub fn servfail(bytes: &[u8], transport: crate::metrics::Transport, out: &mut Vec<u8>) -> bool {
    let (meta, query, edns) = match request::check(bytes) {
        Triage::Drop => return false,
        Triage::Reject { meta, query, edns, .. } => (meta, query, edns),
        Triage::Query(req) => (req.meta, Some(req.query), req.edns),
    };
    let mut answer = Answer::default();
    answer.error(hickory_proto::op::ResponseCode::ServFail);
    let echo = Echo {
        meta: &meta,
        query: query.as_ref(),
        edns,
    };
    write_for(out, &echo, &answer, transport);
    !out.is_empty()
}

#[cfg(test)]
mod tests;
