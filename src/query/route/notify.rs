//! A NOTIFY (RFC 1996) for a zone a block keeps by transfer (`secondary`):
//! the block whose zones hold the name is found as for a query, and its
//! transferred zone of that name told ([`ZoneFile::notify`]).
//!
//! [`ZoneFile::notify`]: crate::query::plugins::file::ZoneFile::notify

use std::net::IpAddr;

use hickory_proto::rr::Name;

use super::Router;

impl Router {
    /// `None`: no block keeps a transferred zone named `zone` (the NOTIFY
    /// is answered NOTIMP, as any other opcode); else whether it came
    /// from one of the zone's primaries (answered) or not (dropped).
    pub fn notified(&self, zone: &Name, from: IpAddr) -> Option<bool> {
        let (block, _) = self.block(zone)?;
        block.files.iter().find_map(|f| f.notify(zone, from))
    }
}
