//! `pprof [ADDRESS] { block [RATE] }` (CoreDNS's plugin): where the
//! profiling endpoints listen, `localhost:6053` by default. One address
//! per Corefile: each `pprof` of another block names the same one or
//! none. `block` (Go's blocking-event profile) is refused with why.

use std::net::{IpAddr, SocketAddr};

use crate::corefile::args::listen_addr;
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt};
use crate::corefile::problem::ConfigError;

/// CoreDNS's default: loopback only, port 6053.
pub const DEFAULT: SocketAddr = SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 6053);

/// The address of one `pprof` line; `None` when it is in error (each
/// error pushed to `errors`). `before` is an earlier block's.
pub fn parse(d: &Directive, before: Option<SocketAddr>, errors: &mut Vec<ConfigError>) -> Option<SocketAddr> {
    options::read("pprof", &d.options, OPTIONS, &mut (), errors);
    if d.args.len() > 1 {
        errors.push(ConfigError::new(&d.args[1].pos, "pprof: at most one address"));
        return None;
    }
    let addr = match d.args.first() {
        Some(w) => listen_addr(w, errors)?,
        None => DEFAULT,
    };
    if before.is_some_and(|b| b != addr) {
        let at = d.args.first().map_or(&d.name.pos, |w| &w.pos);
        errors.push(ConfigError::new(
            at,
            format!(
                "pprof: one profiling address per Corefile (another block has {}); give each block the same",
                before.unwrap_or(addr)
            ),
        ));
        return None;
    }
    Some(addr)
}

const OPTIONS: &[Opt<()>] = &[Opt::refused("block", |a, _, errors| {
    errors.push(ConfigError::new(
        a.pos(),
        "pprof: block is not supported: it samples Go's blocking events and clusterdns is no Go program (its CPU \
         profile is at /debug/pprof/profile); remove the option",
    ))
})];
