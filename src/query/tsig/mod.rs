//! `tsig` (CoreDNS's plugin, RFC 8945): requests signed with a shared
//! key are verified, and their replies signed with the same key, on every
//! transport (UDP, TCP, TLS, HTTPS, QUIC: all reach [`Tsig::admit`]
//! through `Handler::handle`, zone transfers through the TCP path's
//! transfer branch, each message signed: [`Stream`]); `require` refuses
//! what must be signed and is not.
//!
//! The MAC is computed over the request's bytes as they came in, and over
//! the reply's bytes as they are sent: nothing is decoded and encoded
//! again. A listener without a `tsig` directive never comes here.
//!
//! | request | reply |
//! |---|---|
//! | unsigned, `require` names its type or opcode | REFUSED |
//! | unknown key or algorithm | NOTAUTH, TSIG error BADKEY (unsigned) |
//! | wrong MAC (or one truncated too short) | NOTAUTH, TSIG error BADSIG (unsigned) |
//! | signed more than `fudge` seconds away from now | NOTAUTH, TSIG error BADTIME (signed) |
//! | a TSIG record that is malformed or not last | FORMERR |
//! | verified | answered without the TSIG record, reply signed |

pub mod keyfile;
pub mod print;
pub mod setup;
pub mod wire;

use std::sync::Arc;

use ring::hmac;

use setup::{Require, TsigConfig};
use wire::{Variables, WireName};

/// TSIG errors (RFC 8945 §3).
pub const BADSIG: u16 = 16;
pub const BADKEY: u16 = 17;
pub const BADTIME: u16 = 18;
const FORMERR: u8 = 1;
const REFUSED: u8 = 5;
const NOTAUTH: u8 = 9;
/// The fudge written in the replies' TSIG records (RFC 8945 §10).
const FUDGE: u16 = 300;

/// A shared secret and its name (lowercase wire form).
#[derive(Clone)]
struct Key {
    name: Box<[u8]>,
    secret: Arc<[u8]>,
}

/// What one `tsig` directive covers.
#[derive(Clone)]
struct Rule {
    zones: Vec<Box<[u8]>>,
    types: Require<u16>,
    opcodes: Require<u8>,
}

/// The `tsig` directives of one listener's blocks: their keys (shared by
/// all, as CoreDNS's server holds them) and what each covers.
#[derive(Clone)]
pub struct Tsig {
    keys: Vec<Key>,
    rules: Vec<Rule>,
}

/// What becomes of a request.
pub enum Admit {
    /// Not the plugin's: the usual path, with the bytes as they came.
    Plain,
    /// The reply (an error) is written.
    Answered,
    /// Verified: the usual path with `request` (the TSIG record taken
    /// off), then the reply signed by `signer`.
    Signed(Box<Signed>),
}

pub struct Signed {
    pub request: Vec<u8>,
    pub signer: Signer,
}

/// Signs the reply to one verified request (RFC 8945 §5.3).
#[derive(Clone, Debug)]
pub struct Signer {
    key: hmac::Key,
    name: Box<[u8]>,
    algorithm: Box<[u8]>,
    request_mac: Box<[u8]>,
    original_id: u16,
    error: u16,
    /// BADTIME: the request's time, and the server's in Other Data.
    late: Option<(u64, u64)>,
}

/// The HMACs clusterdns computes, by their wire names.
fn algorithm(name: &[u8]) -> Option<hmac::Algorithm> {
    Some(match name {
        b"\x09hmac-sha1\x00" => hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
        b"\x0bhmac-sha256\x00" => hmac::HMAC_SHA256,
        b"\x0bhmac-sha384\x00" => hmac::HMAC_SHA384,
        b"\x0bhmac-sha512\x00" => hmac::HMAC_SHA512,
        _ => return None,
    })
}

/// Seconds since the epoch (TSIG's clock).
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What becomes of `msg` on a listener with `tsig` (a listener without
/// it: [`Admit::Plain`], the only cost a branch).
#[inline]
pub fn admit(tsig: Option<&Tsig>, msg: &[u8], out: &mut Vec<u8>) -> Admit {
    match tsig {
        None => Admit::Plain,
        Some(tsig) => tsig.admit(msg, now(), out),
    }
}

impl Tsig {
    /// `old`'s keys and rules (another block of the listener), and `cfg`'s.
    pub fn with(old: Option<&Tsig>, cfg: &TsigConfig) -> Tsig {
        let mut t = old.cloned().unwrap_or(Tsig {
            keys: Vec::new(),
            rules: Vec::new(),
        });
        for k in &cfg.keys {
            let name = crate::corefile::args::lower_wire(&k.name);
            if !t.keys.iter().any(|have| have.name == name) {
                t.keys.push(Key {
                    name,
                    secret: k.secret.0.clone(),
                });
            }
        }
        t.rules.push(Rule {
            zones: cfg.zones.iter().map(crate::corefile::args::lower_wire).collect(),
            types: cfg.require.clone(),
            opcodes: cfg.require_opcode.clone(),
        });
        t
    }

    /// The rule whose zone is the longest one `name` is under.
    fn rule(&self, name: &WireName) -> Option<&Rule> {
        let zones = self.rules.iter().flat_map(|r| r.zones.iter().map(move |z| (z, r)));
        zones
            .filter(|(z, _)| name.under(z))
            .max_by_key(|(z, _)| z.len())
            .map(|(_, r)| r)
    }

    /// Verifies `msg` at time `now`; an error reply is written to `out`.
    pub fn admit(&self, msg: &[u8], now: u64, out: &mut Vec<u8>) -> Admit {
        let Some(req) = wire::Request::of(msg) else {
            return Admit::Plain;
        };
        let Some(rule) = self.rule(&req.qname) else {
            return Admit::Plain;
        };
        let tsig = match req.tsig {
            Ok(Some(tsig)) => tsig,
            Ok(None) if rule.types.covers(req.qtype) || rule.opcodes.covers(req.opcode) => {
                wire::error(msg, REFUSED, out);
                return Admit::Answered;
            }
            Ok(None) => return Admit::Plain,
            Err(()) => {
                wire::error(msg, FORMERR, out);
                return Admit::Answered;
            }
        };
        match self.verify(msg, &tsig, now) {
            Ok(signer) => {
                let mut request = msg[..tsig.start].to_vec();
                let arcount = u16::from_be_bytes([request[10], request[11]]).saturating_sub(1);
                request[10..12].copy_from_slice(&arcount.to_be_bytes());
                Admit::Signed(Box::new(Signed { request, signer }))
            }
            Err(refusal) => {
                wire::error(msg, NOTAUTH, out);
                refusal.write(&tsig, now, out);
                Admit::Answered
            }
        }
    }

    /// RFC 8945 §5.2: the key, the MAC, then the time.
    fn verify(&self, msg: &[u8], tsig: &wire::Record, now: u64) -> Result<Signer, Refusal> {
        let key = self.keys.iter().find(|k| *k.name == *tsig.key.bytes());
        let alg = algorithm(tsig.algorithm.bytes());
        let (Some(key), Some(alg)) = (key, alg) else {
            return Err(Refusal::Key);
        };
        if key.secret.is_empty() {
            return Err(Refusal::Sig); // not base64 (`Secret::unusable`): miekg/dns fails it so
        }
        let key = hmac::Key::new(alg, &key.secret);
        let arcount = u16::from_be_bytes([msg[10], msg[11]]).saturating_sub(1);
        let header = wire::header(msg, tsig.original_id, arcount).ok_or(Refusal::Sig)?;
        let vars = Variables {
            key: tsig.key.bytes(),
            algorithm: tsig.algorithm.bytes(),
            time: tsig.time,
            fudge: tsig.fudge,
            error: tsig.error,
            other: &msg[tsig.other.clone()],
        };
        let mac = &msg[tsig.mac.clone()];
        let full = wire::digest(&key, None, &header, &msg[..tsig.start], &vars);
        let full = full.as_ref();
        // RFC 8945 §5.2.2.1: at least half the hash and 10 bytes.
        let shortest = (full.len() / 2).max(10);
        if mac.len() > full.len() || mac.len() < shortest || !same(mac, &full[..mac.len()]) {
            return Err(Refusal::Sig);
        }
        let late = now.abs_diff(tsig.time) > u64::from(tsig.fudge);
        let signer = Signer {
            key,
            name: tsig.key.bytes().into(),
            algorithm: tsig.algorithm.bytes().into(),
            request_mac: mac.into(),
            original_id: tsig.original_id,
            error: if late { BADTIME } else { 0 },
            late: late.then_some((tsig.time, now)),
        };
        if late {
            return Err(Refusal::Time(Box::new(signer)));
        }
        Ok(signer)
    }
}

/// Why a signed request is refused.
enum Refusal {
    Key,
    Sig,
    Time(Box<Signer>),
}

impl Refusal {
    /// Appends the TSIG record of the NOTAUTH reply in `out`: without a
    /// MAC for BADKEY and BADSIG (RFC 8945 §5.3.2), signed for BADTIME.
    fn write(self, tsig: &wire::Record, now: u64, out: &mut Vec<u8>) {
        let error = match self {
            Refusal::Time(signer) => {
                signer.sign_at(out, now);
                return;
            }
            Refusal::Key => BADKEY,
            Refusal::Sig => BADSIG,
        };
        let vars = Variables {
            key: tsig.key.bytes(),
            algorithm: tsig.algorithm.bytes(),
            time: now,
            fudge: FUDGE,
            error,
            other: &[],
        };
        wire::append(out, &vars, &[], tsig.original_id);
    }
}

/// Compares two MACs in time independent of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Signed {
    /// `sent`, having signed the reply in `out` when it is sent now (over
    /// UDP within the request's payload size: [`Signer::sign_within`]).
    pub fn signed(&self, sent: bool, udp: bool, out: &mut Vec<u8>) -> bool {
        if sent {
            let limit = udp.then(|| wire::udp_limit(&self.request));
            self.signer.sign_within(out, limit);
        }
        sent
    }
}

impl Signer {
    /// Signs the reply in `out`. Over UDP (`limit`: the client's payload
    /// size), a reply the TSIG record would push past it is first cut to
    /// its header and question with TC set (RFC 8945 §5.3): the client
    /// asks again over TCP.
    pub fn sign_within(&self, out: &mut Vec<u8>, limit: Option<usize>) {
        let mac = self.key.algorithm().digest_algorithm().output_len();
        let other = if self.late.is_some() { 6 } else { 0 };
        let room = self.name.len() + 10 + self.algorithm.len() + 16 + mac + other;
        if limit.is_some_and(|limit| out.len() + room > limit) {
            wire::truncate(out);
        }
        self.sign(out);
    }

    /// Signs the reply in `out` now (RFC 8945 §5.3).
    pub fn sign(&self, out: &mut Vec<u8>) {
        self.sign_at(out, now());
    }

    /// Signs the reply in `out` at time `now`; the MAC written.
    fn sign_at(&self, out: &mut Vec<u8>, now: u64) -> Option<hmac::Tag> {
        let arcount = out.get(10..12).map(|b| u16::from_be_bytes([b[0], b[1]]))?;
        let header = wire::header(out, self.original_id, arcount)?;
        let (time, other) = match self.late {
            Some((asked, ours)) => (asked, ours.to_be_bytes()[2..].to_vec()),
            None => (now, Vec::new()),
        };
        let vars = Variables {
            key: &self.name,
            algorithm: &self.algorithm,
            time,
            fudge: FUDGE,
            error: self.error,
            other: &other,
        };
        let mac = wire::digest(&self.key, Some(&self.request_mac), &header, out, &vars);
        wire::append(out, &vars, mac.as_ref(), self.original_id);
        Some(mac)
    }
}

/// Signs the messages of one multi-message reply, a zone transfer
/// (RFC 8945 §5.3.1): the first as any reply, after the request's MAC;
/// each next one after the MAC of the one before, over its bytes and the
/// timers only. Every message is signed.
pub struct Stream {
    signer: Signer,
    prior: Option<Box<[u8]>>,
}

impl Signer {
    /// The signer of a multi-message reply to this request.
    pub fn stream(self) -> Stream {
        Stream {
            signer: self,
            prior: None,
        }
    }
}

impl Stream {
    /// Signs the next message in `out`, the time now.
    pub fn sign(&mut self, out: &mut Vec<u8>) {
        self.sign_at(out, now());
    }

    fn sign_at(&mut self, out: &mut Vec<u8>, now: u64) {
        let s = &self.signer;
        let Some(prior) = self.prior.take() else {
            self.prior = s.sign_at(out, now).map(|mac| mac.as_ref().into());
            return;
        };
        let Some(arcount) = out.get(10..12).map(|b| u16::from_be_bytes([b[0], b[1]])) else {
            return;
        };
        let Some(header) = wire::header(out, s.original_id, arcount) else {
            return;
        };
        let mac = wire::digest_timers(&s.key, &prior, &header, out, now, FUDGE);
        let vars = Variables {
            key: &s.name,
            algorithm: &s.algorithm,
            time: now,
            fudge: FUDGE,
            error: 0,
            other: &[],
        };
        wire::append(out, &vars, mac.as_ref(), s.original_id);
        self.prior = Some(mac.as_ref().into());
    }
}

#[cfg(test)]
mod tests;
