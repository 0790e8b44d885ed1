//! The query path: bytes in, bytes out, never awaiting the API.
//!
//! ```text
//!  udp / tcp ─► request::check ─► route ─► local (hosts, file) ─► cluster ─► reply::wire
//!  (sockets)    (header rules)    (zone)                          (snapshot)  (flags, EDNS, TC, rcode)
//!                                   └──► forward: cache hit ─────────────────► reply::wire
//!                                          miss ─► defer::Job ─► task ─► upstream ─► defer::deliver
//!  request ─► replay: memo / hits (an earlier reply's bytes, patched) ──► reply::wire
//! ```
//!
//! Start reading at [`Handler::handle`]: one synchronous call per query, made by the UDP
//! worker threads and the TCP connection tasks alike. Only a forwarded cache miss leaves
//! it: the query becomes a [`defer::Job`] answered by a task through its socket or connection.

pub mod defer;
pub mod errors;
pub mod forward;
mod handler;
pub mod limits;
pub mod log;
pub mod logline;
pub mod metadata;
pub mod plugins;
pub mod proxyproto;
pub mod replay;
pub mod reply;
pub mod request;
pub mod route;
mod scratch;
pub mod settle;
pub mod tcp;
pub mod transfer;
pub mod tsig;
pub mod udp;

pub use handler::Handler;
#[cfg(debug_assertions)]
pub use handler::PANIC_TRIGGER;
pub use reply::Answer;
pub use route::{Asker, Block, LoopProbe, Routed, Router};
pub use scratch::Scratch;
