//! The body of an HTTP answer: one DATA frame, then trailers when there
//! are any (gRPC's `grpc-status`; DNS over HTTPS has none).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

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
