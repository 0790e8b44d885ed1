//! Frame Streams, the framing dnstap rides on, in its bidirectional form:
//!
//! ```text
//!  writer                         receiver
//!  READY  (content type) ───────►
//!                        ◄─────── ACCEPT (content type)
//!  START  (content type) ───────►
//!  data frame, data frame … ────►          (u32 length, payload)
//!  STOP                  ───────►
//!                        ◄─────── FINISH
//! ```
//!
//! A control frame is an escape (a zero length), its own length, its type
//! and fields; the one field used is the content type,
//! `protobuf:dnstap.Dnstap`. Everything is big-endian u32s.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// dnstap's content type.
pub const CONTENT_TYPE: &[u8] = b"protobuf:dnstap.Dnstap";

pub const ACCEPT: u32 = 1;
pub const START: u32 = 2;
pub const STOP: u32 = 3;
pub const READY: u32 = 4;
pub const FINISH: u32 = 5;

const FIELD_CONTENT_TYPE: u32 = 1;
/// The largest control frame accepted from a receiver.
const MAX_CONTROL: usize = 512;

/// A control frame of `kind`, with the content type field when `typed`.
pub fn control(kind: u32, typed: bool) -> Vec<u8> {
    let mut body = kind.to_be_bytes().to_vec();
    if typed {
        body.extend_from_slice(&FIELD_CONTENT_TYPE.to_be_bytes());
        body.extend_from_slice(&(CONTENT_TYPE.len() as u32).to_be_bytes());
        body.extend_from_slice(CONTENT_TYPE);
    }
    let mut frame = 0u32.to_be_bytes().to_vec();
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

/// Reads one control frame: its type and whether it names our content
/// type (or names none).
pub async fn read_control<R: AsyncRead + Unpin>(r: &mut R) -> io::Result<(u32, bool)> {
    let escape = r.read_u32().await?;
    if escape != 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "expected a control frame"));
    }
    let len = r.read_u32().await? as usize;
    if !(4..=MAX_CONTROL).contains(&len) {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "bad control frame length"));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).await?;
    Ok(parse_control(&body))
}

/// The type of a control frame body, and whether its content types (if
/// any) include ours.
fn parse_control(body: &[u8]) -> (u32, bool) {
    let word = |at: usize| {
        body.get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let kind = word(0).unwrap_or(0);
    let (mut at, mut any, mut ours) = (4, false, false);
    while let (Some(field), Some(len)) = (word(at), word(at + 4)) {
        let value = body.get(at + 8..at + 8 + len as usize);
        if field == FIELD_CONTENT_TYPE {
            any = true;
            ours |= value == Some(CONTENT_TYPE);
        }
        at += 8 + len as usize;
    }
    (kind, ours || !any)
}

/// The writer's side of the handshake: READY, wait for ACCEPT with our
/// content type, START.
pub async fn open<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S) -> io::Result<()> {
    s.write_all(&control(READY, true)).await?;
    s.flush().await?;
    match read_control(s).await? {
        (ACCEPT, true) => {}
        (ACCEPT, false) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the receiver does not accept protobuf:dnstap.Dnstap",
            ))
        }
        (other, _) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("expected ACCEPT, got control frame {other}"),
            ))
        }
    }
    s.write_all(&control(START, true)).await?;
    s.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_frames_round_trip() {
        let ready = control(READY, true);
        assert_eq!(&ready[..4], &[0, 0, 0, 0]);
        assert_eq!(parse_control(&ready[8..]), (READY, true));
        assert_eq!(parse_control(&control(FINISH, false)[8..]), (FINISH, true));
        let mut other = ACCEPT.to_be_bytes().to_vec();
        other.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 3, b'f', b'o', b'o']);
        assert_eq!(parse_control(&other), (ACCEPT, false));
        // A truncated field is not read past the body.
        assert_eq!(parse_control(&[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 99]), (ACCEPT, false));
    }

    #[tokio::test]
    async fn the_handshake_reads_accept_and_refuses_anything_else() {
        let (mut ours, mut theirs) = tokio::io::duplex(1024);
        let peer = tokio::spawn(async move {
            let got = read_control(&mut theirs).await;
            theirs.write_all(&control(ACCEPT, true)).await.ok();
            let start = read_control(&mut theirs).await;
            (got.ok(), start.ok())
        });
        assert!(open(&mut ours).await.is_ok());
        assert_eq!(peer.await.ok(), Some((Some((READY, true)), Some((START, true)))));
        let (mut ours, mut theirs) = tokio::io::duplex(1024);
        tokio::spawn(async move {
            let _ = read_control(&mut theirs).await;
            theirs.write_all(&control(FINISH, false)).await.ok();
        });
        assert!(open(&mut ours).await.is_err());
    }
}
