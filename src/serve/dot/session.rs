//! A DNS-over-TLS connection's TLS session, without I/O: rustls's
//! unbuffered API over buffers of our own. The TLS bytes read and not yet
//! taken (`incoming`: at most the start of a record), the plaintext
//! decrypted and not yet read (`plain`) and the TLS bytes not yet sent
//! (`outgoing`) are each released (capacity 0) the moment they empty, so
//! that a connection waiting for its next query holds no buffer at all
//! (rustls's own buffered connection keeps a 4 KiB read buffer and more).
//!
//! [`Session::advance`] takes every whole record read (handshake messages
//! answered into `outgoing`, application data into `plain`), seals what
//! is to be sent, and says where the session stands.

use std::io;
use std::sync::Arc;

use rustls::server::UnbufferedServerConnection;
use rustls::unbuffered::{ConnectionState, EncodeError, EncryptError, UnbufferedStatus};
use tokio::io::ReadBuf;

/// Room made for a read: one whole record of the largest size (16 KiB of
/// plaintext with TLS's header and expansion)...
const READ: usize = 16 * 1024 + 5 + 256;
/// ...when less than this is left.
const READ_ROOM: usize = 2048;

/// What [`Session::advance`] is to seal once the session may send data.
pub(super) enum Seal<'a> {
    /// Nothing: only take what was read.
    Nothing,
    /// Application data.
    Data(&'a [u8]),
    /// The end of what we send (a `close_notify` alert).
    CloseNotify,
}

/// Where the session stands after [`Session::advance`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// The handshake needs more from the peer.
    Handshaking,
    /// Application data flows (what was to be sealed is in `outgoing`).
    Open,
    /// Both sides said `close_notify`: nothing more is sent.
    Closed,
}

/// What [`Session::step`] left the session at.
enum Step {
    /// More states to handle.
    More,
    /// Data may be sent: the handshake is over unless it awaits the
    /// client's Finished.
    Writable,
    /// Where [`Session::advance`] stops.
    Stop(Stage),
}

/// One connection's TLS state and buffers.
pub(super) struct Session {
    conn: UnbufferedServerConnection,
    incoming: Vec<u8>,
    plain: Vec<u8>,
    /// How much of `plain` has been read.
    taken: usize,
    outgoing: Vec<u8>,
    /// How much of `outgoing` has been sent.
    sent: usize,
    /// The peer has ended what it sends (`close_notify`, or its TCP end).
    pub(super) ended: bool,
    /// We have ended what we send (`close_notify` sealed).
    pub(super) closing: bool,
}

impl Session {
    /// A server session with `config` (certificate, ALPN, client CA, keylog).
    pub(super) fn new(config: Arc<rustls::ServerConfig>) -> Result<Session, rustls::Error> {
        Ok(Session {
            conn: UnbufferedServerConnection::new(config)?,
            incoming: Vec::new(),
            plain: Vec::new(),
            taken: 0,
            outgoing: Vec::new(),
            sent: 0,
            ended: false,
            closing: false,
        })
    }

    /// Takes every whole record read, then seals `seal` once data may be
    /// sent; where the session stands.
    pub(super) fn advance(&mut self, mut seal: Seal<'_>) -> Result<Stage, rustls::Error> {
        // A TLS 1.3 server may send before the client's Finished (0.5-RTT):
        // the handshake is over only once that has come.
        let mut open = !self.conn.is_handshaking();
        loop {
            match self.step(&mut seal, open)? {
                Step::More => {}
                Step::Stop(stage) => return Ok(stage),
                Step::Writable if self.conn.is_handshaking() => return Ok(Stage::Handshaking),
                Step::Writable => open = true,
            }
        }
    }

    /// One state of rustls's, handled; `open`: the handshake is over.
    fn step(&mut self, seal: &mut Seal<'_>, open: bool) -> Result<Step, rustls::Error> {
        let UnbufferedStatus { mut discard, state } = self.conn.process_tls_records(&mut self.incoming);
        let state = state.inspect_err(|_| self.ended = true)?;
        let step = match state {
            ConnectionState::ReadTraffic(mut records) => {
                if self.taken == self.plain.len() {
                    self.plain.clear();
                    self.taken = 0;
                }
                while let Some(record) = records.next_record() {
                    let record = record?;
                    discard += record.discard;
                    self.plain.extend_from_slice(record.payload);
                }
                Step::More
            }
            ConnectionState::EncodeTlsData(mut data) => {
                encode(&mut self.outgoing, |out| data.encode(out))?;
                Step::More
            }
            // Ours to send from `outgoing`, once, by the caller.
            ConnectionState::TransmitTlsData(data) => {
                data.done();
                Step::More
            }
            ConnectionState::BlockedHandshake => Step::Stop(Stage::Handshaking),
            ConnectionState::PeerClosed => {
                self.ended = true;
                Step::More
            }
            ConnectionState::Closed => {
                self.ended = true;
                Step::Stop(Stage::Closed)
            }
            ConnectionState::WriteTraffic(_) if !open => Step::Writable,
            ConnectionState::WriteTraffic(mut traffic) => {
                match std::mem::replace(seal, Seal::Nothing) {
                    Seal::Nothing => {}
                    Seal::Data(data) => encrypt(&mut self.outgoing, data.len(), |out| traffic.encrypt(data, out))?,
                    Seal::CloseNotify => encrypt(&mut self.outgoing, 0, |out| traffic.queue_close_notify(out))?,
                }
                Step::Stop(Stage::Open)
            }
            // Early data is not enabled (`max_early_data_size` 0).
            _ => return Err(rustls::Error::General("unexpected TLS state".into())),
        };
        self.incoming.drain(..discard);
        release(&mut self.incoming);
        Ok(step)
    }

    /// Reads into `incoming` with `read` (room made first); how much came.
    /// Room left empty is given back.
    pub(super) fn read_with(&mut self, read: impl FnOnce(&mut Vec<u8>) -> io::Result<usize>) -> io::Result<usize> {
        if self.incoming.capacity() - self.incoming.len() < READ_ROOM {
            self.incoming.reserve(READ);
        }
        let got = read(&mut self.incoming);
        release(&mut self.incoming);
        if matches!(got, Ok(0)) {
            self.ended = true;
        }
        got
    }

    /// Whether decrypted data waits to be read.
    pub(super) fn has_plain(&self) -> bool {
        self.taken < self.plain.len()
    }

    /// Copies decrypted data into `buf`; whether there was any.
    pub(super) fn read_plain(&mut self, buf: &mut ReadBuf<'_>) -> bool {
        let unread = &self.plain[self.taken..];
        let n = unread.len().min(buf.remaining());
        if n == 0 {
            return false;
        }
        buf.put_slice(&unread[..n]);
        self.taken += n;
        if self.taken == self.plain.len() {
            self.plain = Vec::new();
            self.taken = 0;
        }
        true
    }

    /// TLS bytes waiting to be sent.
    pub(super) fn unsent(&self) -> &[u8] {
        &self.outgoing[self.sent..]
    }

    /// `n` of [`Session::unsent`] were sent.
    pub(super) fn sent(&mut self, n: usize) {
        self.sent += n;
        if self.sent >= self.outgoing.len() {
            self.outgoing = Vec::new();
            self.sent = 0;
        }
    }

    /// The buffers' capacities (incoming, plain, outgoing): all 0 while idle.
    #[cfg(test)]
    pub(super) fn capacities(&self) -> [usize; 3] {
        [
            self.incoming.capacity(),
            self.plain.capacity(),
            self.outgoing.capacity(),
        ]
    }
}

/// An empty buffer gives its memory back.
fn release(buf: &mut Vec<u8>) {
    if buf.is_empty() && buf.capacity() > 0 {
        *buf = Vec::new();
    }
}

/// Appends a handshake record `encode` writes to `out`, made as large as it asks.
fn encode(
    out: &mut Vec<u8>,
    mut encode: impl FnMut(&mut [u8]) -> Result<usize, EncodeError>,
) -> Result<(), rustls::Error> {
    let at = out.len();
    let need = match encode(&mut []) {
        Ok(_) => return Ok(()),
        Err(EncodeError::InsufficientSize(s)) => s.required_size,
        Err(EncodeError::AlreadyEncoded) => return Err(rustls::Error::General("record encoded twice".into())),
    };
    out.resize(at + need, 0);
    match encode(&mut out[at..]) {
        Ok(n) => {
            out.truncate(at + n);
            Ok(())
        }
        Err(e) => Err(rustls::Error::General(e.to_string())),
    }
}

/// Appends the records `seal` writes for `len` bytes of data to `out`,
/// made as large as it asks.
fn encrypt(
    out: &mut Vec<u8>,
    len: usize,
    mut seal: impl FnMut(&mut [u8]) -> Result<usize, EncryptError>,
) -> Result<(), rustls::Error> {
    let at = out.len();
    // Each record (16 KiB at most) adds its header, type and tag.
    out.resize(at + len + 64 * (len / (16 * 1024) + 1), 0);
    let sealed = match seal(&mut out[at..]) {
        Err(EncryptError::InsufficientSize(s)) => {
            out.resize(at + s.required_size, 0);
            seal(&mut out[at..])
        }
        sealed => sealed,
    };
    match sealed {
        Ok(n) => {
            out.truncate(at + n);
            Ok(())
        }
        Err(e) => {
            out.truncate(at);
            Err(rustls::Error::General(e.to_string()))
        }
    }
}
