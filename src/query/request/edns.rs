//! The client's EDNS as a request states it, and the sizes that follow
//! from it: the OPT record read off the wire ([`opt`]), `bufsize`'s cap on
//! it and on a message sent upstream, and the largest reply a client
//! takes over UDP or TCP.

/// What the client said about EDNS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientEdns {
    pub payload: u16,
    pub dnssec_ok: bool,
    /// The request carries an NSID option (RFC 5001): `nsid` answers it.
    pub nsid: bool,
}

/// An OPT record at `*at`: root owner, type 41, extended rcode 0, options
/// that fill its RDATA exactly and that hickory keeps as opaque bytes (an
/// ECS or NSID option is left to its decoder, which may reject it).
pub(super) fn opt(bytes: &[u8], at: &mut usize) -> Option<(ClientEdns, u8)> {
    let rr = bytes.get(*at..*at + 11)?;
    if rr[0] != 0 || rr[1..3] != [0, 41] || rr[5] != 0 {
        return None;
    }
    let payload = u16::from_be_bytes([rr[3], rr[4]]).max(512); // RFC 6891: below 512 counts as 512
    let dnssec_ok = rr[7] & 0x80 != 0;
    let rdlen = usize::from(u16::from_be_bytes([rr[9], rr[10]]));
    let mut options = bytes.get(*at + 11..*at + 11 + rdlen)?;
    while !options.is_empty() {
        let code = u16::from_be_bytes([options[0], *options.get(1)?]);
        let len = usize::from(u16::from_be_bytes([*options.get(2)?, *options.get(3)?]));
        if matches!(code, 3 | 5 | 8) {
            return None;
        }
        options = options.get(4 + len..)?;
    }
    *at += 11 + rdlen;
    let nsid = false; // an NSID option went to hickory above
    Some((
        ClientEdns {
            payload,
            dnssec_ok,
            nsid,
        },
        rr[6],
    ))
}

/// `bufsize`: the client's EDNS payload lowered to `cap` (never raised).
pub fn capped(edns: Option<ClientEdns>, cap: Option<u16>) -> Option<ClientEdns> {
    match (edns, cap) {
        (Some(e), Some(cap)) => Some(ClientEdns {
            payload: e.payload.min(cap),
            ..e
        }),
        _ => edns,
    }
}

/// `bufsize` for a request sent upstream: lowers the payload size of its
/// OPT record (the CLASS field) to `cap` in place. A message it cannot
/// walk is left as it is.
pub fn cap_payload(message: &mut [u8], cap: u16) {
    let over = super::walk::Records::of(message)
        .into_iter()
        .flatten()
        .filter(|rr| rr.rtype == 41 && rr.class > cap)
        .map(|rr| rr.fixed + 2);
    for class in over.collect::<Vec<_>>() {
        message[class..class + 2].copy_from_slice(&cap.to_be_bytes());
    }
}

/// The largest UDP response a client accepts: its EDNS payload capped at
/// 1232 (the DNS flag day 2020 size), at least 512; 512 without EDNS.
pub fn udp_limit(edns: Option<ClientEdns>) -> usize {
    edns.map_or(512, |e| usize::from(e.payload).clamp(512, 1232))
}

/// The largest reply a client takes over `transport`.
pub fn limit(transport: crate::metrics::Transport, edns: Option<ClientEdns>) -> usize {
    match transport {
        crate::metrics::Transport::Udp => udp_limit(edns),
        crate::metrics::Transport::Tcp => usize::from(u16::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
    use hickory_proto::rr::{Name, RecordType};

    fn with_payload(payload: u16) -> Vec<u8> {
        let mut m = Message::new(7, MessageType::Query, OpCode::Query);
        m.add_query(Query::query(
            Name::from_ascii("a.example.").expect("name"),
            RecordType::A,
        ));
        let mut edns = Edns::new();
        edns.set_max_payload(payload);
        m.edns = Some(edns);
        m.to_vec().expect("encodes")
    }

    fn payload(bytes: &[u8]) -> Option<u16> {
        Message::from_vec(bytes).expect("decodes").edns.map(|e| e.max_payload())
    }

    #[test]
    fn bufsize_lowers_the_opt_payload_only() {
        let mut big = with_payload(4096);
        cap_payload(&mut big, 1232);
        assert_eq!(payload(&big), Some(1232));
        let mut small = with_payload(600);
        cap_payload(&mut small, 1232);
        assert_eq!(payload(&small), Some(600));
        let mut cut = with_payload(4096);
        cut.truncate(20);
        cap_payload(&mut cut, 512); // cannot walk: left alone, no panic
        let client = ClientEdns {
            payload: 4096,
            dnssec_ok: true,
            nsid: false,
        };
        assert_eq!(capped(Some(client), Some(512)).map(|e| e.payload), Some(512));
        assert_eq!(capped(None, Some(512)), None);
    }
}
