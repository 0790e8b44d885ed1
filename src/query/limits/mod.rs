//! `limits { connections N pipeline N in_flight N client_share PERCENT
//! limited_clients N }`, a clusterdns directive: TCP connections per
//! listener, forwarded queries in flight per TCP connection and in all,
//! and per-client fairness under overload (`query/udp/fair.rs`).

pub mod print;
pub mod shed;
pub mod timeouts;

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt};
use crate::corefile::problem::ConfigError;
use crate::query::limits::timeouts::TcpLimits;

/// The default cap on queries being forwarded at once (process-wide).
pub const IN_FLIGHT: usize = 10_000;

/// The options of a `limits` block: the TCP limits and the in-flight cap.
const LIMITS: &[Opt<(TcpLimits, usize)>] = &[
    Opt::new("connections", (1, 1), |a, (tcp, _), errors| {
        at_least_one(a, &mut tcp.connections, errors)
    }),
    Opt::new("pipeline", (1, 1), |a, (tcp, _), errors| {
        at_least_one(a, &mut tcp.pipeline, errors)
    }),
    Opt::new("in_flight", (1, 1), |a, (_, in_flight), errors| {
        at_least_one(a, in_flight, errors)
    }),
    Opt::new("client_share", (1, 1), |a, (tcp, _), errors| {
        match a.parse::<u8>(0, "a percentage (0 turns fairness off)", errors) {
            Some(n) if n <= 100 => tcp.client_share = n,
            Some(_) => errors.push(ConfigError::new(
                &a.args[0].pos,
                "limits: client_share must be between 0 (off) and 100",
            )),
            None => {}
        }
    }),
    Opt::new("limited_clients", (1, 1), |a, (tcp, _), errors| {
        at_least_one(a, &mut tcp.limited_clients, errors)
    }),
];

/// A `limits` count: a number, at least 1.
fn at_least_one(a: &Args<'_>, slot: &mut usize, errors: &mut Vec<ConfigError>) {
    match a.parse::<usize>(0, "a number", errors) {
        Some(0) => errors.push(ConfigError::new(
            &a.args[0].pos,
            format!("limits: {} must be at least 1", a.name.text),
        )),
        Some(n) => *slot = n,
        None => {}
    }
}

/// `limits { connections N pipeline N in_flight N }` (a clusterdns
/// extension): the TCP connection cap per listener, forwarded queries in
/// flight per TCP connection, and forwarded queries in flight in all.
pub fn limits(d: &Directive, tcp: &mut TcpLimits, in_flight: &mut usize, errors: &mut Vec<ConfigError>) {
    Args::from(d).count(0, 0, errors);
    let mut read = (*tcp, *in_flight);
    options::read("limits", &d.options, LIMITS, &mut read, errors);
    (*tcp, *in_flight) = read;
}
