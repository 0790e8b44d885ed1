//! A batch of [`Record`]s as dnstap messages, each a Frame Streams data
//! frame: CLIENT_QUERY + CLIENT_RESPONSE for a served query,
//! FORWARDER_QUERY (+ FORWARDER_RESPONSE when an answer came) for an
//! upstream exchange. As CoreDNS fills them: the client's address and
//! port are the query address (the responder's, ours, is left out); an
//! upstream's are the response address and our socket's the query
//! address; IPv4 (also IPv4-mapped IPv6) is 4 octets, INET.
//!
//! The encoder allocates nothing per message: the fields every message of
//! a tap shares (identity, version, extra, type) are encoded once, the
//! `Message` is one reused value whose byte fields keep their buffers, and
//! prost writes it straight into the batch's output after one length pass.

use std::net::IpAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use prost::Message as _;

use super::proto::{self, Dnstap, Kind, Message};
use super::queue::Batch;
use super::record::{Record, Side};
use crate::dnstap::setup::DnstapConfig;

/// The message field of `Dnstap`.
const MESSAGE_TAG: u32 = 14;

/// Turns a tap's records into frames.
pub(super) struct Encoder {
    /// `Dnstap` without its message: the fields every frame starts with
    /// (protobuf fields may come in any order).
    prefix: Vec<u8>,
    m: Message,
    /// Buffers of byte fields set to `None`, for the next that is set.
    pool: Vec<Vec<u8>>,
}

/// Wall-clock time for the [`Instant`]s of one batch, read once.
pub(super) struct Clock {
    at: Instant,
    since_epoch: Duration,
}

impl Clock {
    pub fn now() -> Clock {
        let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        Clock {
            at: Instant::now(),
            since_epoch,
        }
    }

    /// `t` since the Unix epoch.
    fn wall(&self, t: Instant) -> Duration {
        match self.at.checked_duration_since(t) {
            Some(ago) => self.since_epoch.saturating_sub(ago),
            None => self.since_epoch + t.duration_since(self.at),
        }
    }
}

impl Encoder {
    pub fn of(cfg: &DnstapConfig) -> Encoder {
        let shared = Dnstap {
            identity: Some(cfg.identity.clone().into()),
            version: Some(cfg.version.clone().into()),
            extra: cfg.extra.clone().map(Into::into),
            message: None,
            r#type: proto::DNSTAP_MESSAGE,
        };
        Encoder {
            prefix: shared.encode_to_vec(),
            m: Message::default(),
            pool: Vec::new(),
        }
    }

    /// Appends the frames of every record of `batch` to `out`; how many.
    pub fn batch(&mut self, batch: &Batch, clock: &Clock, out: &mut Vec<u8>) -> u64 {
        batch.records.iter().map(|r| self.record(r, batch, clock, out)).sum()
    }

    /// Appends `r`'s messages to `out` as data frames; how many.
    fn record(&mut self, r: &Record, batch: &Batch, clock: &Clock, out: &mut Vec<u8>) -> u64 {
        let (query_kind, reply_kind) = match r.side {
            Side::Client => (Kind::ClientQuery, Kind::ClientResponse),
            Side::Forwarder => (Kind::ForwarderQuery, Kind::ForwarderResponse),
        };
        self.base(r, query_kind, clock);
        self.set(Field::Query, batch.bytes(r.query));
        self.frame(out);
        let Some(answered) = r.answered else {
            return 1;
        };
        self.m.r#type = reply_kind as i32;
        let at = clock.wall(answered);
        (self.m.response_time_sec, self.m.response_time_nsec) = (Some(at.as_secs()), Some(at.subsec_nanos()));
        self.set(Field::Query, &[]);
        self.set(Field::Reply, batch.bytes(r.reply));
        self.frame(out);
        2
    }

    /// Sets the fields both messages of `r` share, and clears the others.
    fn base(&mut self, r: &Record, kind: Kind, clock: &Clock) {
        let (family, peer) = octets(r.peer.ip());
        let local = r.local.map(|l| (octets(l.ip()).1, u32::from(l.port())));
        let port = Some(u32::from(r.peer.port()));
        let at = clock.wall(r.asked);
        let m = &mut self.m;
        m.r#type = kind as i32;
        m.socket_family = Some(family);
        m.socket_protocol = Some(if r.tcp { proto::TCP } else { proto::UDP });
        (m.query_time_sec, m.query_time_nsec) = (Some(at.as_secs()), Some(at.subsec_nanos()));
        (m.response_time_sec, m.response_time_nsec) = (None, None);
        self.set(Field::Reply, &[]);
        match r.side {
            Side::Client => {
                (self.m.query_port, self.m.response_port) = (port, None);
                self.set(Field::QueryAddress, peer.as_slice());
                self.set(Field::ResponseAddress, &[]);
            }
            Side::Forwarder => {
                (self.m.query_port, self.m.response_port) = (local.as_ref().map(|l| l.1), port);
                self.set(Field::QueryAddress, local.as_ref().map_or(&[][..], |l| l.0.as_slice()));
                self.set(Field::ResponseAddress, peer.as_slice());
            }
        }
    }

    /// Sets a byte field to `value`, or to `None` when it is empty,
    /// keeping the buffers.
    fn set(&mut self, field: Field, value: &[u8]) {
        let m = &mut self.m;
        let slot = match field {
            Field::QueryAddress => &mut m.query_address,
            Field::ResponseAddress => &mut m.response_address,
            Field::Query => &mut m.query_message,
            Field::Reply => &mut m.response_message,
        };
        if value.is_empty() {
            if let Some(buf) = slot.take() {
                self.pool.push(buf);
            }
            return;
        }
        let buf = slot.get_or_insert_with(|| self.pool.pop().unwrap_or_default());
        buf.clear();
        buf.extend_from_slice(value);
    }

    /// Appends the message as one data frame: its length, the shared
    /// fields, the message field.
    fn frame(&self, out: &mut Vec<u8>) {
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&self.prefix);
        prost::encoding::message::encode(MESSAGE_TAG, &self.m, out);
        let len = (out.len() - at - 4) as u32;
        out[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
}

#[derive(Clone, Copy)]
enum Field {
    QueryAddress,
    ResponseAddress,
    Query,
    Reply,
}

/// A socket family and the address as dnstap carries it: 4 octets for
/// IPv4 (also IPv4-mapped), 16 for IPv6.
fn octets(ip: IpAddr) -> (i32, Octets) {
    match ip.to_canonical() {
        IpAddr::V4(v4) => (proto::INET, Octets::V4(v4.octets())),
        IpAddr::V6(v6) => (proto::INET6, Octets::V6(v6.octets())),
    }
}

enum Octets {
    V4([u8; 4]),
    V6([u8; 16]),
}

impl Octets {
    fn as_slice(&self) -> &[u8] {
        match self {
            Octets::V4(o) => o,
            Octets::V6(o) => o,
        }
    }
}

/// The address a test reads back from a message.
#[cfg(test)]
pub(super) fn address(octets: &[u8], port: u32) -> Option<std::net::SocketAddr> {
    let ip = match octets.len() {
        4 => IpAddr::from(<[u8; 4]>::try_from(octets).ok()?),
        16 => IpAddr::from(<[u8; 16]>::try_from(octets).ok()?),
        _ => return None,
    };
    Some(std::net::SocketAddr::new(ip, u16::try_from(port).ok()?))
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;
    use crate::dnstap::setup::Endpoint;

    fn encoder() -> Encoder {
        Encoder::of(&DnstapConfig {
            endpoint: Endpoint::Unix("/x".into()),
            listen: None,
            full: true,
            write_buffer: 1,
            queue: 1,
            identity: "id".into(),
            version: "v".into(),
            extra: Some("e".into()),
            skip_verify: false,
        })
    }

    /// The frames in `out`, decoded.
    fn decode(mut out: &[u8]) -> Vec<Dnstap> {
        let mut all = Vec::new();
        while out.len() >= 4 {
            let len = u32::from_be_bytes([out[0], out[1], out[2], out[3]]) as usize;
            all.push(Dnstap::decode(&out[4..4 + len]).expect("a dnstap frame"));
            out = &out[4 + len..];
        }
        all
    }

    fn addr(a: &str) -> SocketAddr {
        a.parse().expect("addr")
    }

    #[test]
    fn a_served_query_is_a_client_pair_with_its_client_address() {
        let clock = Clock::now();
        let asked = clock.at - Duration::from_secs(1);
        let mut r = Record::new(Side::Client, addr("[::ffff:10.0.0.7]:5353"), false, asked);
        r.answered = Some(asked + Duration::from_millis(2));
        (r.query, r.reply) = ((0, 2), (2, 4));
        let batch = Batch {
            records: vec![r, r],
            wire: vec![1, 2, 3, 4],
        };
        let mut out = Vec::new();
        assert_eq!(encoder().batch(&batch, &clock, &mut out), 4);
        let d = decode(&out);
        assert_eq!(d.len(), 4);
        assert_eq!(d[0].r#type, proto::DNSTAP_MESSAGE);
        assert_eq!(
            (d[0].identity.as_deref(), d[0].extra.as_deref()),
            (Some(&b"id"[..]), Some(&b"e"[..]))
        );
        // The reused message carries nothing over from one record to the next.
        assert_eq!(d[0], d[2]);
        assert_eq!(d[1], d[3]);
        let (q, r) = (d[0].message.clone().expect("m"), d[1].message.clone().expect("m"));
        assert_eq!((q.r#type, r.r#type), (5, 6));
        assert_eq!(q.socket_family, Some(proto::INET));
        assert_eq!(
            address(
                q.query_address.as_deref().unwrap_or_default(),
                q.query_port.unwrap_or(0)
            ),
            Some(addr("10.0.0.7:5353"))
        );
        let wall = clock.wall(asked);
        assert_eq!(
            (q.query_time_sec, q.query_time_nsec),
            (Some(wall.as_secs()), Some(wall.subsec_nanos()))
        );
        assert_eq!((q.query_message, q.response_message), (Some(vec![1, 2]), None));
        assert_eq!((r.query_message, r.response_message), (None, Some(vec![3, 4])));
        let replied = Duration::new(r.response_time_sec.unwrap_or(0), r.response_time_nsec.unwrap_or(0));
        assert_eq!(replied - wall, Duration::from_millis(2));
        assert_eq!((r.response_address, q.response_time_sec), (None, None));
    }

    #[test]
    fn an_upstream_exchange_carries_both_ends_of_the_socket() {
        let clock = Clock::now();
        let mut r = Record::new(Side::Forwarder, addr("[2001:db8::1]:53"), true, clock.at);
        let unanswered = r;
        r.local = Some(addr("[2001:db8::2]:40000"));
        r.answered = Some(clock.at);
        let batch = Batch {
            records: vec![unanswered, r],
            wire: Vec::new(),
        };
        let mut out = Vec::new();
        assert_eq!(encoder().batch(&batch, &clock, &mut out), 3);
        let d = decode(&out);
        let m: Vec<Message> = d.into_iter().map(|d| d.message.expect("m")).collect();
        assert_eq!(
            (m[0].r#type, m[0].socket_family, m[0].socket_protocol),
            (7, Some(proto::INET6), Some(proto::TCP))
        );
        assert_eq!(m[0].response_address.as_ref().map(Vec::len), Some(16));
        assert_eq!(
            (m[0].response_port, m[0].query_address.as_ref(), m[0].query_port),
            (Some(53), None, None)
        );
        assert_eq!((m[1].r#type, m[2].r#type), (7, 8));
        for m in &m[1..] {
            assert_eq!(
                address(
                    m.query_address.as_deref().unwrap_or_default(),
                    m.query_port.unwrap_or(0)
                ),
                Some(addr("[2001:db8::2]:40000"))
            );
            assert_eq!(
                address(
                    m.response_address.as_deref().unwrap_or_default(),
                    m.response_port.unwrap_or(0)
                ),
                Some(addr("[2001:db8::1]:53"))
            );
        }
    }
}
