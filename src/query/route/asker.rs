//! Who asks and how: what travels with a query through every plugin.

use std::net::IpAddr;

/// Who asks and how: what travels unchanged with a query through every
/// plugin (the question itself may be rewritten or chased).
#[derive(Clone, Copy, Debug)]
pub struct Asker {
    /// The client's address (the guard, `autopath`, `template`, the plugin after the answer).
    pub client: IpAddr,
    /// The EDNS DO bit (part of the `cache` key).
    pub dnssec_ok: bool,
    /// The CD bit (part of the `cache` key).
    pub cd: bool,
    /// The request's transport, size, id, opcode, payload size and source
    /// port (`template`'s expressions).
    pub wire: crate::corefile::expr::Wire,
    /// The address of the request's EDNS Client Subnet option, read only
    /// when blocks have views or `geoip { edns-subnet }` metadata.
    pub subnet: Option<IpAddr>,
}

impl Asker {
    /// The client as the chain's plugins see it.
    pub fn of(&self) -> crate::query::plugins::chain::Client {
        crate::query::plugins::chain::Client {
            ip: self.client,
            wire: self.wire,
            subnet: self.subnet,
        }
    }
}
