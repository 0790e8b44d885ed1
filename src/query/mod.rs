//! The query path: bytes in, bytes out, never awaiting the API.
//!
//! ```text
//!  udp / tcp ─► request::check ─► route ─► cluster ─► finish
//!  (sockets)    (header rules)    (zone)   (snapshot)  (flags, EDNS, TC, rcode)
//! ```
//!
//! Start reading at [`Handler::handle`]: one synchronous call per query,
//! made by the UDP worker threads and the TCP connection tasks alike.

pub mod answer;
pub mod cluster;
pub mod finish;
pub mod log;
pub mod memo;
pub mod request;
pub mod route;
pub mod tcp;
pub mod udp;

use std::net::SocketAddr;
use std::time::Instant;

use hickory_proto::op::ResponseCode;

use crate::metrics::{Metrics, Transport};
pub use answer::Answer;
use finish::Echo;
use request::Checked;
pub use route::{Block, Router};

/// Per-worker scratch space, reused for every query it handles.
#[derive(Default)]
pub struct Scratch {
    pub answer: Answer,
    pub out: Vec<u8>,
    memo: memo::Memo,
    key: Vec<u8>,
}

/// Answers one query for the blocks of one listener.
pub struct Handler {
    pub router: Router,
    pub metrics: std::sync::Arc<Metrics>,
}

impl Handler {
    /// Handles one message from `peer`; the reply is left in
    /// `scratch.out`. Returns false when nothing is to be sent (the packet
    /// is dropped). Plain repeated questions are replayed from the memo.
    pub fn handle(&self, bytes: &[u8], peer: SocketAddr, transport: Transport, scratch: &mut Scratch) -> bool {
        let started = self.router.logs().then(Instant::now);
        let Some(key) = memo::Key::parse(bytes, transport, &mut scratch.key) else {
            let Some(outcome) = self.answer(bytes, transport, scratch) else {
                self.metrics.dropped(transport);
                return false;
            };
            self.finish(peer, transport, bytes, outcome, started, scratch);
            return true;
        };
        let generation = self.router.generation();
        let outcome = match scratch.memo.replay(&key, bytes, generation, &mut scratch.out) {
            Some(outcome) => outcome,
            None => {
                let Some(outcome) = self.answer(bytes, transport, scratch) else {
                    // not reached (a memo-eligible packet always gets a reply), but never
                    // send a previous query's bytes
                    key.recycle(&mut scratch.key);
                    self.metrics.dropped(transport);
                    return false;
                };
                if scratch.answer.memoizable {
                    scratch.memo.remember(&key, generation, &scratch.out, outcome);
                }
                outcome
            }
        };
        key.recycle(&mut scratch.key);
        self.finish(peer, transport, bytes, outcome, started, scratch);
        !scratch.out.is_empty()
    }

    /// Counts the reply and writes the query log line when asked for.
    fn finish(
        &self,
        peer: SocketAddr,
        t: Transport,
        bytes: &[u8],
        o: memo::Outcome,
        started: Option<Instant>,
        s: &Scratch,
    ) {
        self.metrics.answered(t, o.rcode, o.truncated);
        if o.log {
            log::query(peer, t, bytes, &s.out, o.rcode, started.unwrap_or_else(Instant::now));
        }
    }

    /// The full path: decode, check, route, answer, encode. `None` when
    /// the packet gets no reply.
    fn answer(&self, bytes: &[u8], transport: Transport, scratch: &mut Scratch) -> Option<memo::Outcome> {
        let Scratch { answer, out, .. } = scratch;
        answer.clear();
        let (meta, query, edns) = match request::check(bytes) {
            Checked::Drop => return None,
            Checked::Reject {
                meta,
                query,
                edns,
                rcode,
            } => {
                answer.error(rcode);
                (meta, query, edns)
            }
            Checked::Query(req) => {
                self.router.answer(&req.query, answer);
                (req.meta, Some(req.query), req.edns)
            }
        };
        let limit = match transport {
            Transport::Udp => request::udp_limit(edns),
            Transport::Tcp => usize::from(u16::MAX),
        };
        let echo = Echo {
            meta: &meta,
            query: query.as_ref(),
            edns,
        };
        let truncated = finish::write(out, &echo, answer, limit);
        (!out.is_empty()).then_some(memo::Outcome {
            rcode: answer.rcode,
            truncated,
            log: answer.log,
        })
    }
}

/// The rcode a query outside every plugin gets.
pub const UNHANDLED: ResponseCode = ResponseCode::Refused;
