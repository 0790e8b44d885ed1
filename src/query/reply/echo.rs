//! What a reply echoes of its request (ID, flags, question, EDNS) and
//! the size of our OPT record. The client's EDNS and the size limits are
//! read in `request`, below this layer.

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

impl Echo<'_> {
    /// The AD bit of the reply to an answer whose AD is `authentic_data`:
    /// it goes only to a client that asked for it with AD or DO (RFC 6840
    /// 5.7-5.8, as CoreDNS's cache gives it per request from one entry).
    pub fn authentic(&self, authentic_data: bool) -> bool {
        authentic_data && (self.meta.authentic_data || self.edns.is_some_and(|e| e.dnssec_ok))
    }
}
