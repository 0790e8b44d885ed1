//! What the chain's plugins are built with beside their options
//! ([`BuildContext`]), what their block-level check sees ([`CheckContext`])
//! and the client they are asked for ([`Client`]).

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use crate::corefile::expr::Wire;
use crate::kubernetes::KubernetesConfig;
use crate::store::Store;

/// The client a query came from, as the plugins see it.
#[derive(Debug, Clone, Copy)]
pub struct Client {
    pub ip: IpAddr,
    /// The request's transport, size, id, opcode, payload size and port.
    pub wire: Wire,
    /// The request's EDNS Client Subnet address, when a plugin reads it
    /// (`metadata` with `geoip { edns-subnet }`, views).
    pub subnet: Option<IpAddr>,
}

impl Client {
    /// No client in particular: what a plugin with [`super::Answering::changes`]
    /// is asked with when the router checks that it passes a question.
    pub const ANY: Client = Client {
        ip: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        wire: Wire {
            tcp: false,
            size: 0,
            id: 0,
            opcode: 0,
            dnssec_ok: false,
            bufsize: 0,
            port: 0,
            server: None,
        },
        subnet: None,
    };
}

/// What a plugin is built with beside its own options.
pub struct BuildContext<'a> {
    /// Its block's metrics' `server` label.
    pub server: &'a str,
    /// Its block's cluster store (`kubernetes`), if it has one.
    pub store: Option<&'a Arc<Store>>,
    /// Its block's `metadata`, if it has one.
    pub metadata: Option<&'a Arc<crate::query::metadata::Metadata>>,
}

impl<'a> BuildContext<'a> {
    /// A block with nothing but its `server` label.
    pub fn of(server: &'a str) -> BuildContext<'a> {
        BuildContext {
            server,
            store: None,
            metadata: None,
        }
    }
}

/// What a setup's block-level check sees of its block.
pub struct CheckContext<'a> {
    /// The block's `kubernetes` directive, if it has one.
    pub kubernetes: Option<&'a KubernetesConfig>,
}
