//! What a reply echoes of its request (ID, flags, question, EDNS) and
//! the size of our OPT record. (The client's EDNS and the size limits
//! stay in `request.rs` while `reply` is still in the query path's cycle:
//! `request` importing `reply` would put it in the cycle too.)

use hickory_proto::op::{Metadata, Query};

use crate::query::request::edns::ClientEdns;

/// The payload size we advertise in our OPT record.
pub const OUR_PAYLOAD: u16 = 1232;

/// Encoded size of our OPT record (root name, type, class, TTL, rdlen).
pub(crate) const OPT_LEN: usize = 11;

/// The request side of a reply: what is echoed back.
pub struct Echo<'a> {
    pub meta: &'a Metadata,
    pub query: Option<&'a Query>,
    pub edns: Option<ClientEdns>,
}
