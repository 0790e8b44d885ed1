//! The messages of dnstap.proto (package `dnstap`, proto2) as prost types:
//! prost's derive writes the encoding from the field tags below, which are
//! the schema's. Only what clusterdns sends is declared (the schema's
//! `Policy`, `query_zone` and `http_protocol` are left out; a decoder skips
//! absent optional fields). To change them, edit the tags here against
//! dnstap.proto; there is no build step.

/// `Dnstap.Type`: the one payload kind the schema defines.
pub const DNSTAP_MESSAGE: i32 = 1;

/// The top-level frame payload (`message Dnstap`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dnstap {
    /// `Bytes`: the same for every message of a tap, shared, not copied.
    #[prost(bytes = "bytes", optional, tag = "1")]
    pub identity: Option<prost::bytes::Bytes>,
    #[prost(bytes = "bytes", optional, tag = "2")]
    pub version: Option<prost::bytes::Bytes>,
    #[prost(bytes = "bytes", optional, tag = "3")]
    pub extra: Option<prost::bytes::Bytes>,
    #[prost(message, optional, tag = "14")]
    pub message: Option<Message>,
    /// Always [`DNSTAP_MESSAGE`] (`required` in the schema).
    #[prost(int32, required, tag = "15")]
    pub r#type: i32,
}

/// `message Message`: one DNS message and where and when it went.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Message {
    /// A [`Kind`] (`required` in the schema).
    #[prost(int32, required, tag = "1")]
    pub r#type: i32,
    /// 1 INET, 2 INET6.
    #[prost(int32, optional, tag = "2")]
    pub socket_family: Option<i32>,
    /// 1 UDP, 2 TCP.
    #[prost(int32, optional, tag = "3")]
    pub socket_protocol: Option<i32>,
    #[prost(bytes = "vec", optional, tag = "4")]
    pub query_address: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "5")]
    pub response_address: Option<Vec<u8>>,
    #[prost(uint32, optional, tag = "6")]
    pub query_port: Option<u32>,
    #[prost(uint32, optional, tag = "7")]
    pub response_port: Option<u32>,
    #[prost(uint64, optional, tag = "8")]
    pub query_time_sec: Option<u64>,
    #[prost(fixed32, optional, tag = "9")]
    pub query_time_nsec: Option<u32>,
    #[prost(bytes = "vec", optional, tag = "10")]
    pub query_message: Option<Vec<u8>>,
    #[prost(uint64, optional, tag = "12")]
    pub response_time_sec: Option<u64>,
    #[prost(fixed32, optional, tag = "13")]
    pub response_time_nsec: Option<u32>,
    #[prost(bytes = "vec", optional, tag = "14")]
    pub response_message: Option<Vec<u8>>,
}

/// `Message.Type` values clusterdns sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Kind {
    ClientQuery = 5,
    ClientResponse = 6,
    ForwarderQuery = 7,
    ForwarderResponse = 8,
}

/// `SocketFamily`.
pub const INET: i32 = 1;
pub const INET6: i32 = 2;
/// `SocketProtocol`.
pub const UDP: i32 = 1;
pub const TCP: i32 = 2;

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;

    #[test]
    fn required_fields_and_tags_encode_as_the_schema_says() {
        let d = Dnstap {
            identity: Some(prost::bytes::Bytes::from_static(b"id")),
            version: None,
            extra: None,
            message: Some(Message {
                r#type: Kind::ClientQuery as i32,
                socket_family: Some(INET),
                socket_protocol: Some(UDP),
                query_address: Some(vec![127, 0, 0, 1]),
                response_address: None,
                query_port: Some(53),
                response_port: None,
                query_time_sec: Some(1),
                query_time_nsec: Some(2),
                query_message: None,
                response_time_sec: None,
                response_time_nsec: None,
                response_message: None,
            }),
            r#type: DNSTAP_MESSAGE,
        };
        let bytes = d.encode_to_vec();
        // identity: field 1, wire type 2; type: field 15, varint 1, last.
        assert_eq!(&bytes[..4], &[0x0a, 2, b'i', b'd']);
        assert_eq!(&bytes[bytes.len() - 2..], &[15 << 3, 1]);
        // query_time_nsec is fixed32: field 9, wire type 5.
        assert!(bytes.windows(5).any(|w| w == [9 << 3 | 5, 2, 0, 0, 0]));
        assert_eq!(Dnstap::decode(&bytes[..]).ok(), Some(d));
    }
}
