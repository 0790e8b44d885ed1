//! `timeouts { read DURATION write DURATION idle DURATION maxtcpqueries N }`
//! (CoreDNS's) into [`TcpLimits`], which `limits` completes.

use std::time::Duration;

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt};
use crate::corefile::problem::ConfigError;

/// How TCP clients are held to account (`timeouts` and `limits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpLimits {
    /// From a query's first byte to its last.
    pub read: Duration,
    /// For each batch of replies to be taken by the client.
    pub write: Duration,
    /// Between queries; an idle connection is closed after it.
    pub idle: Duration,
    /// Open connections per listener; at the cap the connection idle
    /// longest is closed for a new one (none idle: the new one is refused).
    pub connections: usize,
    /// Forwarded queries of one connection in flight at once; beyond it
    /// the connection is not read until one is answered.
    pub pipeline: usize,
    /// Queries answered on one connection before it is closed (CoreDNS's
    /// `maxtcpqueries`); 0: no limit.
    pub max_queries: usize,
    /// Percent of an overloaded UDP worker's queries above which one
    /// client is limited to a queue of its own (`client_share`); 0: off.
    pub client_share: u8,
    /// Clients limited at once per UDP worker (`limited_clients`).
    pub limited_clients: usize,
}

impl Default for TcpLimits {
    /// CoreDNS's timeouts (read 3 s, write 5 s, idle 10 s).
    fn default() -> Self {
        TcpLimits {
            read: Duration::from_secs(3),
            write: Duration::from_secs(5),
            idle: Duration::from_secs(10),
            connections: 10_000,
            pipeline: 64,
            max_queries: 0,
            client_share: 10,
            limited_clients: 8,
        }
    }
}

/// `timeouts { read DURATION write DURATION idle DURATION maxtcpqueries N }`
/// (CoreDNS's), into `tcp`; `maxtcpqueries -1` is no limit.
pub fn timeouts(d: &Directive, tcp: &mut TcpLimits, errors: &mut Vec<ConfigError>) {
    Args::from(d).count(0, 0, errors);
    if d.options.is_empty() {
        errors.push(ConfigError::new(
            &d.name.pos,
            "timeouts: needs at least one of read, write, idle, maxtcpqueries in a block (or leave the directive out)",
        ));
    }
    options::read("timeouts", &d.options, TIMEOUTS, tcp, errors);
}

/// The options of a `timeouts` block.
const TIMEOUTS: &[Opt<TcpLimits>] = &[
    Opt::new("read", (1, 1), |a, tcp, errors| timeout(a, &mut tcp.read, errors)),
    Opt::new("write", (1, 1), |a, tcp, errors| timeout(a, &mut tcp.write, errors)),
    Opt::new("idle", (1, 1), |a, tcp, errors| timeout(a, &mut tcp.idle, errors)),
    Opt::new("maxtcpqueries", (1, 1), |a, tcp, errors| {
        match a.parse::<i64>(0, "a number", errors) {
            Some(-1) => tcp.max_queries = 0,
            Some(n) if n > 0 => tcp.max_queries = usize::try_from(n).unwrap_or(usize::MAX),
            Some(n) => errors.push(ConfigError::new(
                &a.args[0].pos,
                format!("timeouts: maxtcpqueries {n} must be -1 (no limit) or a positive number"),
            )),
            None => {}
        }
    }),
];

/// One of `timeouts`' durations: a bare number is seconds, and it lies
/// between 1 s and 24 h (as CoreDNS).
fn timeout(a: &Args<'_>, slot: &mut Duration, errors: &mut Vec<ConfigError>) {
    let secs = a.args[0].text.parse::<u64>().ok().map(Duration::from_secs);
    match secs.or_else(|| a.duration(0, errors)) {
        Some(d) if d < Duration::from_secs(1) || d > Duration::from_secs(86_400) => errors.push(ConfigError::new(
            &a.args[0].pos,
            format!("timeouts: {} must be between 1s and 24h", a.name.text),
        )),
        Some(d) => *slot = d,
        None => {}
    }
}
