//! An [`Exchange`] as dnstap messages, each a Frame Streams data frame:
//! CLIENT_QUERY + CLIENT_RESPONSE for a served query, FORWARDER_QUERY (+
//! FORWARDER_RESPONSE when an answer came) for an upstream exchange. As
//! CoreDNS fills them: the client's address and port are the query
//! address (the responder's, ours, is left out); an upstream's are the
//! response address; IPv4 (also IPv4-mapped IPv6) is 4 octets, INET.

use std::net::IpAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use prost::bytes::Bytes;
use prost::Message as _;

use super::proto::{self, Dnstap, Kind, Message};
use super::{Exchange, Side};
use crate::config::dnstap::DnstapConfig;

/// What every message of one tap carries.
pub(super) struct Stamp {
    identity: Bytes,
    version: Bytes,
    extra: Option<Bytes>,
}

impl Stamp {
    pub(super) fn of(cfg: &DnstapConfig) -> Stamp {
        Stamp {
            identity: Bytes::from(cfg.identity.clone()),
            version: Bytes::from(cfg.version.clone()),
            extra: cfg.extra.clone().map(Bytes::from),
        }
    }

    /// Appends `ex`'s messages to `out` as data frames; how many.
    pub(super) fn frames(&self, mut ex: Exchange, out: &mut Vec<u8>) -> u64 {
        let (query_kind, reply_kind) = match ex.side {
            Side::Client => (Kind::ClientQuery, Kind::ClientResponse),
            Side::Forwarder => (Kind::ForwarderQuery, Kind::ForwarderResponse),
        };
        let mut m = base(&ex, query_kind);
        m.query_message = ex.query.take();
        self.frame(m, out);
        let Some(answered) = ex.answered else {
            return 1;
        };
        let mut m = base(&ex, reply_kind);
        (m.response_time_sec, m.response_time_nsec) = split(answered);
        m.response_message = ex.reply;
        self.frame(m, out);
        2
    }

    fn frame(&self, message: Message, out: &mut Vec<u8>) {
        let d = Dnstap {
            identity: Some(self.identity.clone()),
            version: Some(self.version.clone()),
            extra: self.extra.clone(),
            message: Some(message),
            r#type: proto::DNSTAP_MESSAGE,
        };
        out.extend_from_slice(&(d.encoded_len() as u32).to_be_bytes());
        d.encode_raw(out);
    }
}

/// The fields both messages of `ex` share.
fn base(ex: &Exchange, kind: Kind) -> Message {
    let (family, address) = family_and_octets(ex.peer.ip());
    let port = Some(u32::from(ex.peer.port()));
    let (sec, nsec) = split(ex.asked);
    let client = ex.side == Side::Client;
    Message {
        r#type: kind as i32,
        socket_family: Some(family),
        socket_protocol: Some(if ex.tcp { proto::TCP } else { proto::UDP }),
        query_address: client.then(|| address.clone()),
        query_port: port.filter(|_| client),
        response_address: (!client).then_some(address),
        response_port: port.filter(|_| !client),
        query_time_sec: sec,
        query_time_nsec: nsec,
        query_message: None,
        response_time_sec: None,
        response_time_nsec: None,
        response_message: None,
    }
}

fn family_and_octets(ip: IpAddr) -> (i32, Vec<u8>) {
    match ip.to_canonical() {
        IpAddr::V4(v4) => (proto::INET, v4.octets().to_vec()),
        IpAddr::V6(v6) => (proto::INET6, v6.octets().to_vec()),
    }
}

fn split(t: SystemTime) -> (Option<u64>, Option<u32>) {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    (Some(d.as_secs()), Some(d.subsec_nanos()))
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
    use std::time::Duration;

    use super::*;
    use crate::config::dnstap::Endpoint;

    fn stamp() -> Stamp {
        Stamp::of(&DnstapConfig {
            endpoint: Endpoint::Unix("/x".into()),
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

    #[test]
    fn a_served_query_is_a_client_pair_with_its_client_address() {
        let asked = UNIX_EPOCH + Duration::new(1000, 5);
        let ex = Exchange {
            side: Side::Client,
            peer: "[::ffff:10.0.0.7]:5353".parse().expect("addr"),
            tcp: false,
            asked,
            answered: Some(asked + Duration::from_millis(2)),
            query: Some(vec![1, 2]),
            reply: Some(vec![3, 4]),
        };
        let mut out = Vec::new();
        assert_eq!(stamp().frames(ex, &mut out), 2);
        let d = decode(&out);
        assert_eq!(d.len(), 2);
        assert_eq!(
            (d[0].identity.as_deref(), d[0].extra.as_deref()),
            (Some(&b"id"[..]), Some(&b"e"[..]))
        );
        let (q, r) = (d[0].message.clone().expect("m"), d[1].message.clone().expect("m"));
        assert_eq!((q.r#type, r.r#type), (5, 6));
        assert_eq!(q.socket_family, Some(proto::INET));
        assert_eq!(
            address(
                q.query_address.as_deref().unwrap_or_default(),
                q.query_port.unwrap_or(0)
            ),
            "10.0.0.7:5353".parse().ok()
        );
        assert_eq!((q.query_time_sec, q.query_time_nsec), (Some(1000), Some(5)));
        assert_eq!((q.query_message, q.response_message), (Some(vec![1, 2]), None));
        assert_eq!((r.query_message, r.response_message), (None, Some(vec![3, 4])));
        assert_eq!(r.response_time_nsec, Some(2_000_005));
        assert!(r.response_address.is_none());
    }

    #[test]
    fn an_unanswered_upstream_exchange_is_one_forwarder_query() {
        let ex = Exchange {
            side: Side::Forwarder,
            peer: "[2001:db8::1]:53".parse().expect("addr"),
            tcp: true,
            asked: UNIX_EPOCH,
            answered: None,
            query: None,
            reply: None,
        };
        let mut out = Vec::new();
        assert_eq!(stamp().frames(ex, &mut out), 1);
        let m = decode(&out)[0].message.clone().expect("m");
        assert_eq!(
            (m.r#type, m.socket_family, m.socket_protocol),
            (7, Some(proto::INET6), Some(proto::TCP))
        );
        assert_eq!(m.response_address.map(|a| a.len()), Some(16));
        assert_eq!((m.response_port, m.query_address), (Some(53), None));
    }
}
