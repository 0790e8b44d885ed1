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
pub mod memo;
pub mod request;
pub mod route;
pub mod tcp;
pub mod udp;

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
    /// Handles one message; the reply is left in `scratch.out`. Returns
    /// false when nothing is to be sent (the packet is dropped).
    pub fn handle(&self, bytes: &[u8], transport: Transport, scratch: &mut Scratch) -> bool {
        let Some(key) = memo::Key::parse(bytes, transport, &mut scratch.key) else {
            return self.answer(bytes, transport, scratch);
        };
        let generation = self.router.generation();
        if let Some((rcode, truncated)) = scratch.memo.replay(&key, bytes, generation, &mut scratch.out) {
            self.metrics.answered(transport, rcode, truncated);
            key.recycle(&mut scratch.key);
            return true;
        }
        let sent = self.answer(bytes, transport, scratch);
        if sent && scratch.answer.memoizable {
            let truncated = scratch.out.get(2).is_some_and(|b| b & 0x02 != 0);
            scratch
                .memo
                .remember(&key, generation, &scratch.out, scratch.answer.rcode, truncated);
        }
        key.recycle(&mut scratch.key);
        sent
    }

    /// The full path: decode, check, route, answer, encode.
    fn answer(&self, bytes: &[u8], transport: Transport, scratch: &mut Scratch) -> bool {
        let Scratch { answer, out, .. } = scratch;
        answer.clear();
        let (meta, query, edns) = match request::check(bytes) {
            Checked::Drop => {
                self.metrics.dropped(transport);
                return false;
            }
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
        self.metrics.answered(transport, answer.rcode, truncated);
        !out.is_empty()
    }
}

/// The rcode a query outside every plugin gets.
pub const UNHANDLED: ResponseCode = ResponseCode::Refused;
