//! `nsid [DATA]` (RFC 5001): a request whose OPT record carries an NSID
//! option gets DATA (default: the host name) back as the NSID option of
//! the reply's OPT record, whichever plugin answered and whether the
//! answer was made here or forwarded; a request that did not ask gets
//! nothing added. Tells operators which replica answered.
//!
//! The router notes the block's DATA on the answer when it enters the
//! block (`Tags::nsid`, carried to the forwarding task by the
//! `Continuation`); the reply writers add the option when the client's
//! EDNS asked for it ([`option`]). A request carrying NSID is never
//! taken by the fast paths (`request::edns::opt` leaves it to hickory's
//! decoder), so they never need to know.

use crate::query::request::edns::ClientEdns;

pub mod print;
pub mod setup;

/// The EDNS option code of NSID (RFC 5001).
pub const CODE: u16 = 3;

/// The NSID data the reply's OPT carries: the block's DATA (`block`,
/// the answer's `Tags::nsid`) when the client asked for it.
pub fn option(client: ClientEdns, block: Option<&[u8]>) -> Option<&[u8]> {
    block.filter(|_| client.nsid)
}

/// The size of the NSID option (code, length, data) the reply's OPT carries.
pub fn option_len(client: Option<ClientEdns>, block: Option<&[u8]>) -> usize {
    client.and_then(|c| option(c, block)).map_or(0, |d| 4 + d.len())
}
