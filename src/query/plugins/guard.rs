//! A plugin that answers nothing but judges who may ask what: the router
//! asks a block's guard ([`Guard`]) at its gates (the name as asked before
//! a replay, the name a rewrite made, every second name it asks on the
//! client's behalf), and a denial ends the query there. The names it is
//! asked about come decoded or as the client's wire bytes ([`Asked`]).

use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::rr::Name;

#[cfg(doc)]
use crate::corefile::args::lower_wire;
use crate::metrics::exposed::Exposed;

/// What a guard decides for one question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judgement {
    /// The query goes on.
    Allow,
    /// REFUSED, with extended error 15 (Blocked) to EDNS clients.
    Block,
    /// NOERROR without records, with extended error 17 (Filtered).
    Filter,
    /// No reply at all.
    Drop,
}

/// A block's guard, built from its setup ([`super::chain::Setup::guard`]).
pub trait Guard: Send + Sync {
    /// What `client` asking `qtype` of `name` gets, counted in the
    /// guard's metrics.
    fn judge(&self, name: &Name, qtype: u16, client: IpAddr) -> Judgement;

    /// Whether `client` may ask `qtype` of `name` (decoded, or the wire
    /// bytes of a plain query), counting nothing: the caller counts the
    /// question with [`Guard::allowed`] when it answers it.
    fn admits(&self, name: &dyn Asked, qtype: u16, client: IpAddr) -> bool;

    /// Counts one question allowed and answered without [`Guard::judge`].
    fn allowed(&self);

    /// The counters this guard keeps for `/metrics`, if any.
    fn exposed(&self) -> Option<Arc<dyn Exposed>> {
        None
    }
}

/// A question name the router can place under a zone: decoded, or as the
/// client's wire bytes.
pub trait Asked {
    /// Whether the name is `zone` or below it (ASCII case ignored); `wire`
    /// is the zone's [`lower_wire`] form.
    fn under(&self, zone: &Name, wire: &[u8]) -> bool;
}

impl Asked for &Name {
    fn under(&self, zone: &Name, _wire: &[u8]) -> bool {
        zone.zone_of(self)
    }
}

/// A question name in wire form, uncompressed, as [`crate::query::request::parse`]
/// accepted it (labels of at most 63 bytes, ending in the root label).
#[derive(Clone, Copy)]
pub struct WireName<'a>(pub &'a [u8]);

impl Asked for WireName<'_> {
    /// The zone's bytes must end the name and start at one of its labels:
    /// a walk over the name's length bytes, then one comparison (length
    /// bytes are below 64, never letters, so ignoring case leaves them be).
    fn under(&self, _zone: &Name, wire: &[u8]) -> bool {
        if wire.len() == 1 {
            return true; // the root: every name ends in its label
        }
        let name = self.0;
        let Some(at) = name.len().checked_sub(wire.len()) else {
            return false;
        };
        let mut label = 0;
        while label < at {
            label += usize::from(name[label]) + 1;
        }
        label == at && name[at..].eq_ignore_ascii_case(wire)
    }
}
