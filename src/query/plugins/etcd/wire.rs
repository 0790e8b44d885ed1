//! The few messages of etcd's v3 API (`etcdserverpb` and `mvccpb`, proto3)
//! that the mirror sends and reads, as prost types with etcd's field
//! tags: a Range of the prefix, one Watch of it, LeaseTimeToLive for the
//! TTL of a key with a lease, and Authenticate for `credentials`. Fields the mirror never reads are left out (prost skips
//! unknown fields).

/// `etcdserverpb.RangeRequest`: the keys in `[key, range_end)`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RangeRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
}

/// `etcdserverpb.ResponseHeader`: the store's revision when answered.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseHeader {
    #[prost(int64, tag = "3")]
    pub revision: i64,
}

/// `mvccpb.KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub mod_revision: i64,
    #[prost(bytes = "vec", tag = "5")]
    pub value: Vec<u8>,
    #[prost(int64, tag = "6")]
    pub lease: i64,
}

/// `etcdserverpb.RangeResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RangeResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(message, repeated, tag = "2")]
    pub kvs: Vec<KeyValue>,
    #[prost(bool, tag = "3")]
    pub more: bool,
}

/// `etcdserverpb.WatchCreateRequest`: changes to `[key, range_end)` from
/// `start_revision` on.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WatchCreateRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub start_revision: i64,
    #[prost(bool, tag = "4")]
    pub progress_notify: bool,
}

/// `etcdserverpb.WatchRequest` with only its `create_request` arm.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WatchRequest {
    #[prost(message, optional, tag = "1")]
    pub create_request: Option<WatchCreateRequest>,
}

/// `mvccpb.Event`: `kind` 0 is a put, 1 a delete.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Event {
    #[prost(int32, tag = "1")]
    pub kind: i32,
    #[prost(message, optional, tag = "2")]
    pub kv: Option<KeyValue>,
}

/// The `kind` of a delete [`Event`].
pub const DELETE: i32 = 1;

/// `etcdserverpb.WatchResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WatchResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(int64, tag = "2")]
    pub watch_id: i64,
    #[prost(bool, tag = "3")]
    pub created: bool,
    #[prost(bool, tag = "4")]
    pub canceled: bool,
    #[prost(int64, tag = "5")]
    pub compact_revision: i64,
    #[prost(string, tag = "6")]
    pub cancel_reason: String,
    #[prost(message, repeated, tag = "11")]
    pub events: Vec<Event>,
}

/// `etcdserverpb.AuthenticateRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AuthenticateRequest {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub password: String,
}

/// `etcdserverpb.AuthenticateResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AuthenticateResponse {
    #[prost(string, tag = "2")]
    pub token: String,
}

/// `etcdserverpb.LeaseTimeToLiveRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseTimeToLiveRequest {
    #[prost(int64, tag = "1")]
    pub id: i64,
}

/// `etcdserverpb.LeaseTimeToLiveResponse`: `ttl` the seconds left (-1:
/// the lease is gone).
#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseTimeToLiveResponse {
    #[prost(int64, tag = "3")]
    pub ttl: i64,
}

/// The end of the range of every key starting with `prefix` (etcd's
/// `WithPrefix`): the prefix with its last byte below 0xff raised by one.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0] // every key
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn prefix_end_as_etcd_computes_it() {
        assert_eq!(prefix_end(b"/skydns/"), b"/skydns0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff"), vec![0]);
    }

    #[test]
    fn a_watch_request_is_its_create_arm() {
        let req = WatchRequest {
            create_request: Some(WatchCreateRequest {
                key: b"/a".to_vec(),
                range_end: b"/b".to_vec(),
                start_revision: 7,
                progress_notify: false,
            }),
        };
        // field 1, length 8: key (1) "/a", range_end (2) "/b", start_revision (3) 7
        assert_eq!(req.encode_to_vec(), b"\x0a\x0a\x0a\x02/a\x12\x02/b\x18\x07".to_vec());
    }
}
