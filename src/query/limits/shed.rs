//! `shed` (CoreDNS 1.14.7): accepted, and served by clusterdns's own
//! overload policy. CoreDNS's plugin gives each UDP socket one writer and
//! a bounded stack of replies, and drops arriving queries while the stack
//! is full, so that a flood cannot pile up goroutines without bound.
//! clusterdns's UDP workers are built that way already: each socket is
//! read and written by one thread in batches, a query that waited longer
//! than a client waits is dropped before anything answers it
//! (`clusterdns_udp_late_dropped_total`), and the clients that take the
//! most are shed first (`clusterdns_fair_shed_total`). So the directive
//! changes nothing in how queries are served; it makes the block's
//! `coredns_shed_dropped_total{server, reason}` series appear:
//! `reason="query"` counts those drops before the plugin chain, and
//! `reason="response"` stays 0, since no reply clusterdns makes is
//! evicted before it is written. As in CoreDNS it takes no arguments and
//! belongs to plain DNS blocks only.

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::problem::ConfigError;
use crate::corefile::words::Block;

/// `shed` in a block served over `scheme` (its name: `dns`, `tls`...).
pub fn parse(d: &Directive, scheme: &str, errors: &mut Vec<ConfigError>) -> bool {
    if scheme != "dns" {
        let message = format!("shed: only plain DNS server blocks (dns://) can shed; this block is {scheme}://");
        errors.push(ConfigError::new(&d.name.pos, message));
        return false;
    }
    Args::from(d).count(0, 0, errors)
}

/// How `clusterdns check` prints it.
pub(crate) fn print(b: &mut Block, shed: bool) {
    if shed {
        b.line(1, "shed");
    }
}
