//! How `clusterdns check` prints `acl`: every option with its value,
//! defaults written out, so the printout loads again to the same values.

use crate::corefile::args::spaced;
use crate::corefile::words::{with, Block};
use crate::query::plugins::acl::setup::{AclAction, AclRule};
use hickory_proto::rr::RecordType;

/// One `acl ZONES { ... }` per rule, in the order they are tried; every
/// policy with its types and nets written out (`*`: all).
pub(crate) fn acl(b: &mut Block, rules: &[AclRule]) {
    for rule in rules {
        let options: Vec<String> = rule
            .policies
            .iter()
            .map(|p| {
                let action = match p.action {
                    AclAction::Allow => "allow",
                    AclAction::Block => "block",
                    AclAction::Filter => "filter",
                    AclAction::Drop => "drop",
                };
                let types = p.types.as_ref().map_or("*".to_string(), |t| {
                    let t: Vec<String> = t.iter().map(|q| RecordType::from(*q).to_string()).collect();
                    t.join(" ")
                });
                let nets: Vec<String> = p.nets.iter().map(|(ip, len)| format!("{ip}/{len}")).collect();
                format!("{action} type {types} net {}", nets.join(" "))
            })
            .collect();
        b.directive(with("acl", &spaced(&rule.zones, "")), &options);
    }
}
