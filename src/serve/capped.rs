//! An HTTP/3 connection (h3 over `h3_quinn`) whose request streams each
//! deliver at most a set number of bytes. h3 holds a HEADERS frame whole
//! before it decodes it and checks its size, so without a cap one request
//! could make it hold any amount (a 30 MB head did, CVE-2026-32936's
//! kind); past the cap the stream reads as ended by an error, h3 drops
//! the request, and the stream is stopped (`H3_REQUEST_REJECTED`).
//! Everything else is `h3_quinn`'s, passed through.

use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use h3::error::Code;
use h3::quic::{self, ConnectionErrorIncoming, StreamErrorIncoming, StreamId, WriteBuf};

/// `h3_quinn`'s connection, its accepted request streams capped.
pub struct Capped {
    inner: h3_quinn::Connection,
    cap: usize,
}

impl Capped {
    /// `conn` with each request stream taking at most `cap` bytes.
    pub fn new(conn: quinn::Connection, cap: usize) -> Capped {
        Capped {
            inner: h3_quinn::Connection::new(conn),
            cap,
        }
    }
}

impl<B: Buf> quic::Connection<B> for Capped {
    type RecvStream = h3_quinn::RecvStream;
    type OpenStreams = Opener;

    fn poll_accept_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<Self::RecvStream, ConnectionErrorIncoming>> {
        quic::Connection::<B>::poll_accept_recv(&mut self.inner, cx)
    }

    fn poll_accept_bidi(&mut self, cx: &mut Context<'_>) -> Poll<Result<Self::BidiStream, ConnectionErrorIncoming>> {
        let cap = self.cap;
        quic::Connection::<B>::poll_accept_bidi(&mut self.inner, cx).map_ok(|s| Bidi::new(s, cap))
    }

    fn opener(&self) -> Opener {
        Opener(quic::Connection::<B>::opener(&self.inner), self.cap)
    }
}

impl<B: Buf> quic::OpenStreams<B> for Capped {
    type BidiStream = Bidi<B>;
    type SendStream = h3_quinn::SendStream<B>;

    fn poll_open_bidi(&mut self, cx: &mut Context<'_>) -> Poll<Result<Bidi<B>, StreamErrorIncoming>> {
        let cap = self.cap;
        self.inner.poll_open_bidi(cx).map_ok(|s| Bidi::new(s, cap))
    }

    fn poll_open_send(&mut self, cx: &mut Context<'_>) -> Poll<Result<Self::SendStream, StreamErrorIncoming>> {
        self.inner.poll_open_send(cx)
    }

    fn close(&mut self, code: Code, reason: &[u8]) {
        quic::OpenStreams::<B>::close(&mut self.inner, code, reason)
    }
}

/// `h3_quinn`'s stream opener, its bidirectional streams capped.
pub struct Opener(h3_quinn::OpenStreams, usize);

impl<B: Buf> quic::OpenStreams<B> for Opener {
    type BidiStream = Bidi<B>;
    type SendStream = h3_quinn::SendStream<B>;

    fn poll_open_bidi(&mut self, cx: &mut Context<'_>) -> Poll<Result<Bidi<B>, StreamErrorIncoming>> {
        let cap = self.1;
        self.0.poll_open_bidi(cx).map_ok(|s| Bidi::new(s, cap))
    }

    fn poll_open_send(&mut self, cx: &mut Context<'_>) -> Poll<Result<Self::SendStream, StreamErrorIncoming>> {
        self.0.poll_open_send(cx)
    }

    fn close(&mut self, code: Code, reason: &[u8]) {
        quic::OpenStreams::<B>::close(&mut self.0, code, reason)
    }
}

/// A request stream: `h3_quinn`'s sending half, a capped receiving half.
pub struct Bidi<B: Buf> {
    send: h3_quinn::SendStream<B>,
    recv: Recv,
}

impl<B: Buf> Bidi<B> {
    fn new(stream: h3_quinn::BidiStream<B>, cap: usize) -> Bidi<B> {
        let (send, recv) = quic::BidiStream::split(stream);
        Bidi {
            send,
            recv: Recv { inner: recv, left: cap },
        }
    }
}

impl<B: Buf> quic::BidiStream<B> for Bidi<B> {
    type SendStream = h3_quinn::SendStream<B>;
    type RecvStream = Recv;

    fn split(self) -> (Self::SendStream, Recv) {
        (self.send, self.recv)
    }
}

impl<B: Buf> quic::SendStream<B> for Bidi<B> {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.send.poll_ready(cx)
    }

    fn send_data<T: Into<WriteBuf<B>>>(&mut self, data: T) -> Result<(), StreamErrorIncoming> {
        self.send.send_data(data)
    }

    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.send.poll_finish(cx)
    }

    fn reset(&mut self, reset_code: u64) {
        self.send.reset(reset_code)
    }

    fn send_id(&self) -> StreamId {
        self.send.send_id()
    }
}

impl<B: Buf> quic::RecvStream for Bidi<B> {
    type Buf = Bytes;

    fn poll_data(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, StreamErrorIncoming>> {
        self.recv.poll_data(cx)
    }

    fn stop_sending(&mut self, error_code: u64) {
        self.recv.stop_sending(error_code)
    }

    fn recv_id(&self) -> StreamId {
        self.recv.recv_id()
    }
}

/// A receiving half that delivers at most `left` more bytes.
pub struct Recv {
    inner: h3_quinn::RecvStream,
    left: usize,
}

impl quic::RecvStream for Recv {
    type Buf = Bytes;

    fn poll_data(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, StreamErrorIncoming>> {
        let data = std::task::ready!(self.inner.poll_data(cx))?;
        let len = data.as_ref().map_or(0, Buf::remaining);
        if len > self.left {
            self.left = 0;
            let code = Code::H3_REQUEST_REJECTED.value();
            self.inner.stop_sending(code);
            return Poll::Ready(Err(StreamErrorIncoming::StreamTerminated { error_code: code }));
        }
        self.left -= len;
        Poll::Ready(Ok(data))
    }

    fn stop_sending(&mut self, error_code: u64) {
        self.inner.stop_sending(error_code)
    }

    fn recv_id(&self) -> StreamId {
        self.inner.recv_id()
    }
}
