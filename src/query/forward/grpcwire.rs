//! The bytes of CoreDNS's gRPC service, `coredns.dns.DnsService/Query`,
//! shared by the server of `grpc://` blocks (`serve/grpc.rs`) and the
//! `grpc` directive's client (`grpc.rs`): a call's body is one message
//! behind gRPC's 5-byte prefix (a compressed flag, a big-endian length),
//! and the message is the protobuf `DnsPacket { bytes msg = 1; }`, written
//! and read here by hand (a tag, a varint length, the bytes; other fields
//! skipped).

/// The one method: its HTTP/2 path.
pub const PATH: &str = "/coredns.dns.DnsService/Query";
/// The longest DNS message taken, either way.
pub const MAX_MESSAGE: usize = 65_535;
/// The longest body: the prefix, a tag, a 3-byte length, a message.
pub const MAX_BODY: usize = 5 + 4 + MAX_MESSAGE;

/// gRPC status codes used.
pub const OK: u32 = 0;
pub const INVALID_ARGUMENT: u32 = 3;
pub const NOT_FOUND: u32 = 5;
pub const RESOURCE_EXHAUSTED: u32 = 8;
pub const UNIMPLEMENTED: u32 = 12;
pub const UNAVAILABLE: u32 = 14;

/// The one message of a call's body: uncompressed, exactly as long as its
/// prefix says.
pub fn unframe(body: &[u8]) -> Option<&[u8]> {
    let (&compressed, rest) = body.split_first()?;
    let len = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    let packet = rest.get(4..)?;
    (compressed == 0 && packet.len() == len).then_some(packet)
}

/// Field 1 (`msg`) of a `DnsPacket`: the last one given, empty when none;
/// other fields are skipped. `None`: not a protobuf message.
pub fn msg_field(mut b: &[u8]) -> Option<&[u8]> {
    let mut msg: &[u8] = &[];
    while !b.is_empty() {
        let key = varint(&mut b)?;
        match (key >> 3, key & 7) {
            (1, 2) => msg = bytes_field(&mut b)?,
            (1, _) => return None,
            (_, 0) => drop(varint(&mut b)?),
            (_, 1) => b = b.get(8..)?,
            (_, 2) => drop(bytes_field(&mut b)?),
            (_, 5) => b = b.get(4..)?,
            _ => return None,
        }
    }
    Some(msg)
}

/// The DNS message of a whole call body (prefix and `DnsPacket`).
pub fn message(body: &[u8]) -> Option<&[u8]> {
    unframe(body).and_then(msg_field)
}

/// A length-delimited field's bytes.
fn bytes_field<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = usize::try_from(varint(b)?).ok()?;
    let (field, rest) = (b.get(..len)?, b.get(len..)?);
    *b = rest;
    Some(field)
}

/// A protobuf varint, at most 10 bytes.
fn varint(b: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let (&byte, rest) = b.split_first()?;
        *b = rest;
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// A DNS message's `DnsPacket` behind gRPC's 5-byte prefix.
pub fn frame(dns: &[u8]) -> Vec<u8> {
    let mut packet = vec![0x0a];
    let mut len = dns.len();
    while len >= 0x80 {
        packet.push((len as u8 & 0x7f) | 0x80);
        len >>= 7;
    }
    packet.push(len as u8);
    packet.extend_from_slice(dns);
    let mut out = vec![0];
    out.extend_from_slice(&(packet.len() as u32).to_be_bytes());
    out.extend_from_slice(&packet);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dns_packet_is_read_and_written_as_protobuf_behind_the_prefix() {
        let reply = vec![7u8; 300];
        let framed = frame(&reply);
        assert_eq!(&framed[..5], &[0, 0, 0, 1, 0x2f], "3 bytes of field head and 300");
        assert_eq!(&framed[5..8], &[0x0a, 0xac, 0x02]);
        let packet = unframe(&framed).expect("one message");
        assert_eq!(msg_field(packet), Some(&reply[..]));
        assert_eq!(message(&framed), Some(&reply[..]));
        // another field before, a second msg after: skipped, the last wins
        let mut two = vec![0x10, 0x96, 0x01, 0x1a, 1, 9, 0x0a, 1, 5];
        two.extend_from_slice(packet);
        assert_eq!(msg_field(&two), Some(&reply[..]));
        assert_eq!(msg_field(&[]), Some(&[][..]), "no msg: empty");
        assert_eq!(msg_field(&[0x0a, 5, 1]), None, "cut short");
        assert_eq!(msg_field(&[0x08, 1]), None, "msg as a varint");
        assert_eq!(
            msg_field(&[0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1]),
            None
        );
        assert_eq!(unframe(&[1, 0, 0, 0, 0]), None, "compressed");
        assert_eq!(unframe(&[0, 0, 0, 0, 2, 1]), None, "short");
        assert_eq!(unframe(&[0, 0, 0]), None);
    }
}
