//! What a handler produces: an rcode and three sections of records.
//! [`wire`] turns it into wire bytes; nothing else touches rcodes.

mod answer;
pub mod echo;
pub mod header;
pub mod loadbalance;
pub mod nsid;
mod records;
pub mod summary;
pub mod tags;
pub mod wire;

pub use answer::Answer;
pub use loadbalance::shuffle;
pub use records::{address, cname, hinfo_rfc8482, ns, prefixed, ptr, soa, srv, txt, Zone, SOA_TIMERS};
pub use summary::Summary;
pub use tags::Tags;
