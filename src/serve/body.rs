//! The body of an HTTP answer: one DATA frame, then trailers when there
//! are any (gRPC's `grpc-status`; DNS over HTTPS has none); and the
//! `Cache-Control` age of a DNS over HTTPS answer ([`min_ttl`]).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

use crate::query::request::walk::{Records, Section};

/// One answer's bytes and trailers, each sent once.
#[derive(Debug, Default)]
pub struct Reply {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl Reply {
    /// A body of `data` alone.
    pub fn new(data: Bytes) -> Reply {
        Reply {
            data: (!data.is_empty()).then_some(data),
            trailers: None,
        }
    }

    /// A body of `data`, then `trailers`.
    pub fn with_trailers(data: Bytes, trailers: HeaderMap) -> Reply {
        Reply {
            trailers: Some(trailers),
            ..Reply::new(data)
        }
    }
}

impl Reply {
    /// The bytes (for HTTP/3, which sends them itself).
    pub fn into_data(self) -> Option<Bytes> {
        self.data
    }
}

impl Body for Reply {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let frame = match this.data.take() {
            Some(data) => Some(Frame::data(data)),
            None => this.trailers.take().map(Frame::trailers),
        };
        Poll::Ready(frame.map(Ok))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}

/// The smallest TTL of a reply's answer and authority records, for
/// `Cache-Control` (RFC 8484 section 5.1), read off the wire without
/// decoding; 0 when it has none or cannot be walked.
pub fn min_ttl(reply: &[u8]) -> u32 {
    let Some(records) = Records::of(reply) else {
        return 0;
    };
    let ttls = records
        .filter(|rr| rr.section != Section::Additional)
        .filter_map(|rr| reply.get(rr.fixed + 4..rr.fixed + 8))
        .map(|t| u32::from_be_bytes([t[0], t[1], t[2], t[3]]));
    ttls.min().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use hickory_proto::op::{Message, MessageType, OpCode};
    use hickory_proto::rr::{rdata::A, Name, RData, Record};

    #[test]
    fn max_age_is_the_smallest_answer_or_authority_ttl() {
        let name = Name::from_ascii("a.example.").expect("name");
        let mut m = Message::new(7, MessageType::Response, OpCode::Query);
        for ttl in [300, 60] {
            m.add_answer(Record::from_rdata(name.clone(), ttl, RData::A(A::new(192, 0, 2, 1))));
        }
        m.add_additional(Record::from_rdata(name, 5, RData::A(A::new(192, 0, 2, 2))));
        let wire = m.to_vec().expect("encode");
        assert_eq!(super::min_ttl(&wire), 60);
        assert_eq!(super::min_ttl(&wire[..wire.len() - 3]), 60, "a cut additional record");
        assert_eq!(super::min_ttl(&wire[..20]), 0);
    }
}
