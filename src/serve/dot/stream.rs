//! A DNS-over-TLS connection as the TCP path reads and writes it: one TCP
//! socket and one [`Session`] shared by a read half (the connection's
//! task) and a write half (its writer task, made at the first query).
//! The socket is used through its readiness, so no buffer is made before
//! there is something to read; the session is locked only for the moment
//! of a step, never across a wait. The read half waits on the socket's
//! read readiness only and the write half on its write readiness only, so
//! each half's task is the one woken.
//!
//! What the reader has to send itself (a key update's answer) goes out at
//! once if the socket takes it, else with the writer's next write.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::session::{Seal, Session, Stage};

/// The socket and the session both halves use.
struct Shared {
    tcp: TcpStream,
    session: Mutex<Session>,
}

impl Shared {
    fn session(&self) -> io::Result<MutexGuard<'_, Session>> {
        self.session
            .lock()
            .map_err(|_| io::Error::other("TLS session poisoned"))
    }
}

/// The reading half of a DoT connection.
pub struct TlsRead(Arc<Shared>);

/// The writing half of a DoT connection.
pub struct TlsWrite(Arc<Shared>);

/// The two halves of `tcp` carrying `session` (its handshake done).
pub(super) fn split(tcp: TcpStream, session: Session) -> (TlsRead, TlsWrite) {
    let shared = Arc::new(Shared {
        tcp,
        session: Mutex::new(session),
    });
    (TlsRead(shared.clone()), TlsWrite(shared))
}

fn broken(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// Sends what the session has to send as far as the socket takes it now,
/// without waiting.
fn send_now(tcp: &TcpStream, session: &mut Session) -> io::Result<()> {
    while !session.unsent().is_empty() {
        match tcp.try_write(session.unsent()) {
            Ok(n) => session.sent(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Sends what the session has to send, waiting for the socket to take it.
fn poll_send(tcp: &TcpStream, session: &mut Session, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
    while !session.unsent().is_empty() {
        ready!(tcp.poll_write_ready(cx))?;
        match tcp.try_write(session.unsent()) {
            Ok(n) => session.sent(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Poll::Ready(Err(e)),
        }
    }
    Poll::Ready(Ok(()))
}

impl TlsRead {
    /// Resolves once there is something to read: plaintext decrypted
    /// before, the peer's end, or bytes on the socket (not yet read).
    pub async fn readable(&self) {
        let waiting = self.0.session().is_ok_and(|s| !s.has_plain() && !s.ended);
        if waiting {
            // A peek, not the socket's readiness: a read that took all
            // there was leaves that set (only a read that finds nothing
            // clears it). An error is the read's to report.
            let _ = self.0.tcp.peek(&mut [0u8; 1]).await;
        }
    }
}

impl AsyncRead for TlsRead {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let shared = &*self.0;
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            {
                let mut session = shared.session()?;
                if session.read_plain(buf) {
                    return Poll::Ready(Ok(()));
                }
                session.advance(Seal::Nothing).map_err(broken)?;
                send_now(&shared.tcp, &mut session)?;
                if session.read_plain(buf) || session.ended {
                    return Poll::Ready(Ok(()));
                }
            }
            ready!(shared.tcp.poll_read_ready(cx))?;
            match shared.session()?.read_with(|room| shared.tcp.try_read_buf(room)) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for TlsWrite {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let shared = &*self.0;
        let mut session = shared.session()?;
        // What was sealed before goes first: a client that does not read
        // holds back the writer, not an ever larger buffer.
        ready!(poll_send(&shared.tcp, &mut session, cx))?;
        match session.advance(Seal::Data(data)).map_err(broken)? {
            Stage::Open => {}
            Stage::Handshaking | Stage::Closed => return Poll::Ready(Err(io::ErrorKind::NotConnected.into())),
        }
        send_now(&shared.tcp, &mut session)?;
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let shared = &*self.0;
        poll_send(&shared.tcp, &mut *shared.session()?, cx)
    }

    /// Sends what is left and a `close_notify`, then ends the socket's
    /// sending side.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let shared = &*self.0;
        let mut session = shared.session()?;
        ready!(poll_send(&shared.tcp, &mut session, cx))?;
        if !session.closing {
            session.closing = true;
            // A session that failed or closed seals nothing more.
            let _ = session.advance(Seal::CloseNotify);
        }
        ready!(poll_send(&shared.tcp, &mut session, cx))?;
        let _ = socket2::SockRef::from(&shared.tcp).shutdown(std::net::Shutdown::Write);
        Poll::Ready(Ok(()))
    }
}
