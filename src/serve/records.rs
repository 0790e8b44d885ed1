//! One TLS record per DNS over HTTPS answer on an HTTP/2 connection.
//!
//! hyper's HTTP/2 hands the TLS stream every frame that is ready in one
//! vectored write, and rustls seals such a write into as few records as
//! it can: answers to queries that arrived together leave in one record.
//! Some clients read one record at a time and take at most one finished
//! answer from it: dnsperf's DoH (nghttp2 fed one `SSL_read`, pausing at
//! a second answer's data and dropping it) lost every answer after the
//! first and stalled on its timeouts, about 66 answers a second. So a
//! record here ends after each frame that ends a stream (an answer's last
//! DATA frame, or HEADERS closing an empty one), as unbound's DoH does.
//! The records are still sent together: rustls queues them and the
//! connection's flush writes them out in one `writev`.
//!
//! [`Frames`] follows the server's outgoing HTTP/2 frames (only their
//! 9-byte headers are read); [`RecordPerAnswer`] is the stream hyper
//! writes to, cutting each write at those frames' ends.

use std::io::{self, IoSlice, Write as _};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

/// An HTTP/2 frame header's length.
const HEAD: usize = 9;
/// Frame types that may end a stream (RFC 9113 section 6).
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
/// The END_STREAM flag of DATA and HEADERS.
const END_STREAM: u8 = 0x1;

/// Where the outgoing bytes are in the frame they belong to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Frames {
    head: [u8; HEAD],
    /// Bytes of the current frame's header seen.
    seen: usize,
    /// Payload bytes of the current frame still to come (once `seen` is 9).
    left: usize,
    /// The current frame ends its stream.
    ends: bool,
}

impl Frames {
    /// Takes in bytes from the start of `bytes`, stopping right after a
    /// frame that ends a stream; how many it took.
    pub fn feed(&mut self, bytes: &[u8]) -> usize {
        let mut at = 0;
        while at < bytes.len() {
            if self.seen < HEAD {
                let take = (HEAD - self.seen).min(bytes.len() - at);
                self.head[self.seen..self.seen + take].copy_from_slice(&bytes[at..at + take]);
                self.seen += take;
                at += take;
                if self.seen < HEAD {
                    break;
                }
                let h = self.head;
                self.left = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
                self.ends = matches!(h[3], DATA | HEADERS) && h[4] & END_STREAM != 0;
            } else {
                let take = self.left.min(bytes.len() - at);
                self.left -= take;
                at += take;
            }
            if self.seen == HEAD && self.left == 0 {
                let ends = self.ends;
                *self = Frames::default();
                if ends {
                    break;
                }
            }
        }
        at
    }

    /// How many bytes from the start of `bytes` belong in the current
    /// record: up to the end of the first frame in them that ends a stream.
    pub fn cut(&self, bytes: &[u8]) -> usize {
        let mut probe = *self;
        probe.feed(bytes)
    }
}

/// A server TLS stream that ends a record after each answer when it
/// carries HTTP/2 (`frames`), and passes writes through otherwise.
pub struct RecordPerAnswer {
    tls: TlsStream<TcpStream>,
    frames: Option<Frames>,
}

impl RecordPerAnswer {
    /// Wraps an accepted session; cuts records only if ALPN chose `h2`.
    pub fn new(tls: TlsStream<TcpStream>) -> RecordPerAnswer {
        let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
        RecordPerAnswer {
            tls,
            frames: h2.then(Frames::default),
        }
    }

    /// Whether ALPN chose HTTP/2.
    pub fn is_h2(&self) -> bool {
        self.frames.is_some()
    }

    /// Seals `bufs` into rustls's queue, each piece up to a frame that
    /// ends a stream (or a slice's end) a record of its own; how many
    /// bytes it took (0: the queue is full).
    fn seal(&mut self, frames: &mut Frames, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let session = self.tls.get_mut().1;
        let mut taken = 0;
        for buf in bufs {
            let mut at = 0;
            while at < buf.len() {
                let piece = &buf[at..at + frames.cut(&buf[at..])];
                let n = session.writer().write(piece)?;
                frames.feed(&piece[..n]);
                taken += n;
                at += n;
                if n < piece.len() {
                    return Ok(taken);
                }
            }
        }
        Ok(taken)
    }
}

impl AsyncRead for RecordPerAnswer {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tls).poll_read(cx, buf)
    }
}

impl AsyncWrite for RecordPerAnswer {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    /// The records are queued in rustls and sent by the next flush (HTTP/2
    /// flushes after each batch of frames); a full queue is sent first.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let Some(mut frames) = this.frames else {
            return Pin::new(&mut this.tls).poll_write_vectored(cx, bufs);
        };
        if bufs.iter().all(|b| b.is_empty()) {
            return Poll::Ready(Ok(0));
        }
        loop {
            let taken = this.seal(&mut frames, bufs);
            this.frames = Some(frames);
            match taken? {
                0 => ready!(Pin::new(&mut this.tls).poll_flush(cx))?,
                n => return Poll::Ready(Ok(n)),
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tls).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tls).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame of `kind` with `flags` on stream 1 and `len` payload bytes.
    fn frame(kind: u8, flags: u8, len: usize) -> Vec<u8> {
        let l = (len as u32).to_be_bytes();
        let mut f = vec![l[1], l[2], l[3], kind, flags, 0, 0, 0, 1];
        f.resize(HEAD + len, 0xab);
        f
    }

    #[test]
    fn a_cut_follows_each_frame_that_ends_a_stream() {
        let settings = frame(0x4, 0, 6);
        let (h1, d1) = (frame(HEADERS, 0x4, 20), frame(DATA, END_STREAM, 48));
        let (h2, d2) = (frame(HEADERS, 0x4, 5), frame(DATA, END_STREAM, 300));
        let empty = frame(HEADERS, 0x4 | END_STREAM, 3);
        let wire = [
            settings.clone(),
            h1.clone(),
            d1.clone(),
            h2.clone(),
            d2.clone(),
            empty.clone(),
        ]
        .concat();
        let first = settings.len() + h1.len() + d1.len();
        let ends = [first, first + h2.len() + d2.len(), wire.len()];
        // written whole or in any pieces, each answer's end ends a piece
        for step in [wire.len(), 1, 2, 8, 9, 10, 57, 100] {
            let (mut frames, mut pos, mut cuts) = (Frames::default(), 0, Vec::new());
            for chunk in wire.chunks(step) {
                let mut i = 0;
                while i < chunk.len() {
                    let n = frames.cut(&chunk[i..]);
                    frames.feed(&chunk[i..i + n]);
                    (i, pos) = (i + n, pos + n);
                    cuts.push(pos);
                }
            }
            assert!(ends.iter().all(|e| cuts.contains(e)), "step {step}: {cuts:?}");
            if step == wire.len() {
                assert_eq!(cuts, ends);
            }
        }
    }
}
