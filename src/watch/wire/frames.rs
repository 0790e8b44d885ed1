//! A watch response body cut into events, wherever the chunks split them
//! or however many arrive in one.

use http_body_util::BodyExt;
use kube::client::Body;
use serde::de::IgnoredAny;

use super::failure::Failure;

/// A watch response body cut into events: each one complete JSON value,
/// wherever the chunks split them.
pub struct Frames<B = Body> {
    body: B,
    buf: Vec<u8>,
    /// Whether `buf` may hold a complete value not yet taken.
    ready: bool,
}

/// The most one event may take (an object is at most about 1.5 MB in etcd).
const MAX_EVENT: usize = 64 << 20;

impl<B> Frames<B>
where
    B: http_body::Body + Unpin,
    B::Data: AsRef<[u8]>,
    B::Error: std::fmt::Display,
{
    pub fn new(body: B) -> Self {
        Frames {
            body,
            buf: Vec::new(),
            ready: false,
        }
    }

    /// The next event's text; `None` when the stream ended (cleanly or
    /// not: either way the watch resumes).
    pub async fn next(&mut self) -> Option<Result<Vec<u8>, Failure>> {
        loop {
            if self.ready {
                match self.take() {
                    Ok(Some(event)) => return Some(Ok(event)),
                    Ok(None) => self.ready = false,
                    Err(e) => return Some(Err(e)),
                }
            }
            let frame = match self.body.frame().await? {
                Ok(frame) => frame,
                Err(e) => {
                    tracing::debug!(target: "kubernetes", "watch stream ended: {e}");
                    return None;
                }
            };
            let Ok(data) = frame.into_data() else { continue };
            let data = data.as_ref();
            self.buf.extend_from_slice(data);
            if self.buf.len() > MAX_EVENT {
                return Some(Err(Failure::Read(format!("an event larger than {MAX_EVENT} bytes"))));
            }
            // A complete value ends with '}' (then maybe whitespace); the
            // API server ends each event with a newline.
            self.ready =
                data.contains(&b'\n') || self.buf.iter().rev().find(|b| !b.is_ascii_whitespace()) == Some(&b'}');
        }
    }

    /// Takes the first complete value out of the buffer.
    fn take(&mut self) -> Result<Option<Vec<u8>>, Failure> {
        let start = self.buf.iter().position(|b| !b.is_ascii_whitespace());
        let Some(start) = start else {
            self.buf.clear();
            return Ok(None);
        };
        let mut values = serde_json::Deserializer::from_slice(&self.buf[start..]).into_iter::<IgnoredAny>();
        match values.next() {
            Some(Ok(IgnoredAny)) => {
                let end = start + values.byte_offset();
                let event = self.buf[start..end].to_vec();
                self.buf.drain(..end);
                Ok(Some(event))
            }
            Some(Err(e)) if e.is_eof() => Ok(None),
            Some(Err(e)) => Err(Failure::Decode(e)),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::watch::lean::Service;
    use crate::watch::wire::{decode, Event};

    #[tokio::test]
    async fn frames_split_anywhere_and_joined_without_newlines() {
        let text = concat!(
            r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"1"}}}"#,
            "\n",
            r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"2"}}}"#,
            r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"3"}}}"#,
            "\n"
        );
        for cut in [1, 7, 30, 67, 68, 100] {
            let chunks: Vec<Result<http_body::Frame<&'static [u8]>, std::convert::Infallible>> = text
                .as_bytes()
                .chunks(cut)
                .map(|c| Ok(http_body::Frame::data(c)))
                .collect();
            let body = http_body_util::StreamBody::new(futures::stream::iter(chunks));
            let mut frames = Frames::new(body);
            let mut seen = Vec::new();
            while let Some(event) = frames.next().await {
                match decode::<Service>(&event.expect("event")).expect("decodes") {
                    Event::Bookmark(rv) => seen.push(rv),
                    other => panic!("{other:?}"),
                }
            }
            assert_eq!(seen, ["1", "2", "3"], "chunks of {cut}");
        }
    }

    #[tokio::test]
    async fn a_complete_event_is_not_held_back_by_the_start_of_the_next() {
        let chunk: &'static [u8] =
            b"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\"}}}\n{\"type\":\"ADD";
        let first = futures::stream::iter([Ok::<_, std::convert::Infallible>(http_body::Frame::data(chunk))]);
        let body = http_body_util::StreamBody::new(futures::StreamExt::chain(first, futures::stream::pending()));
        let mut frames = Frames::new(body);
        let next = tokio::time::timeout(Duration::from_secs(1), frames.next()).await;
        let text = next.expect("not held back").expect("an event").expect("complete");
        assert!(matches!(decode::<Service>(&text), Ok(Event::Bookmark(rv)) if rv == "1"));
    }
}
