//! Reading and printing `proxyproto`:
//!
//! ```text
//! proxyproto {
//!     allow CIDR...
//!     default use|ignore|reject|skip
//!     udp_session_tracking DURATION [MAX_SESSIONS]
//! }
//! ```

use std::time::Duration;

use crate::corefile::args::{choice, Args, Net};
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;
use crate::corefile::words::{duration, Block};

/// What is done with a source's PROXY headers (CoreDNS's `default` words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// A header, when present, gives the client's address.
    Use,
    /// A header is read and dropped; the sender stays the client.
    Ignore,
    /// A connection or datagram with a header is refused.
    Reject,
    /// Nothing is looked for: the bytes are DNS as they come.
    Skip,
}

/// `proxyproto { allow NETS; default POLICY; udp_session_tracking TTL [MAX] }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxyproto {
    /// Sources whose headers are used (empty: every source's).
    pub allow: Vec<Net>,
    /// The policy of the other sources (`None`: not written).
    pub default: Option<Policy>,
    /// How long a Spectrum UDP session's client is remembered (zero: off).
    pub session_ttl: Duration,
    /// The most sessions remembered per UDP worker.
    pub max_sessions: usize,
}

/// Sessions remembered by default (CoreDNS's).
pub const MAX_SESSIONS: usize = 10_240;

const POLICIES: &[(&str, Policy)] = &[
    ("use", Policy::Use),
    ("ignore", Policy::Ignore),
    ("reject", Policy::Reject),
    ("skip", Policy::Skip),
];

const OPTIONS: &[Opt<Proxyproto>] = &[
    Opt::new("allow", (1, MANY), |a, p, errors| {
        for w in a.args {
            match Net::parse(&w.text) {
                Some(net) => p.allow.push(net),
                None => errors.push(ConfigError::new(
                    &w.pos,
                    format!("proxyproto: allow: '{}' is not a network (e.g. 192.168.1.1/32)", w.text),
                )),
            }
        }
    }),
    Opt::new("default", (1, 1), |a, p, errors| {
        let mut lower = a.args[0].clone();
        lower.text.make_ascii_lowercase();
        if let Some(policy) = choice(&lower, "proxyproto: default", POLICIES, errors) {
            p.default = Some(policy);
        }
    }),
    Opt::new("udp_session_tracking", (1, 2), |a, p, errors| {
        if let Some(ttl) = a.duration(0, errors) {
            p.session_ttl = ttl;
        }
        if a.args.len() == 2 {
            match a.args[1].text.parse::<usize>() {
                Ok(n) if n > 0 => p.max_sessions = n,
                _ => errors.push(ConfigError::new(
                    &a.args[1].pos,
                    format!(
                        "proxyproto: udp_session_tracking: '{}' is not a positive number of sessions",
                        a.args[1].text
                    ),
                )),
            }
        }
    }),
];

/// Reads `proxyproto` into a block's `held` (a second one is an error, as
/// in CoreDNS).
pub fn once(d: &Directive, held: &mut Option<Proxyproto>, errors: &mut Vec<ConfigError>) {
    if held.is_some() {
        errors.push(ConfigError::new(&d.name.pos, "proxyproto: only one per server block"));
        return;
    }
    *held = Some(parse(d, errors));
}

/// Reads `proxyproto` (no arguments; options as above).
pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> Proxyproto {
    Args::from(d).count(0, 0, errors);
    let mut p = Proxyproto {
        allow: Vec::new(),
        default: None,
        session_ttl: Duration::ZERO,
        max_sessions: MAX_SESSIONS,
    };
    options::read("proxyproto", &d.options, OPTIONS, &mut p, errors);
    p
}

/// `check`'s lines: every option, the policy of unlisted sources as it
/// applies.
pub(crate) fn print(b: &mut Block, p: Option<&Proxyproto>) {
    let Some(p) = p else { return };
    let mut options = Vec::new();
    if !p.allow.is_empty() {
        let nets: Vec<String> = p.allow.iter().map(|n| format!("{}/{}", n.addr, n.len)).collect();
        options.push(format!("allow {}", nets.join(" ")));
    }
    let default = p.default.unwrap_or(if p.allow.is_empty() {
        Policy::Use
    } else {
        Policy::Ignore
    });
    let word = POLICIES.iter().find(|(_, v)| *v == default).map_or("use", |(w, _)| *w);
    options.push(format!("default {word}"));
    if !p.session_ttl.is_zero() {
        options.push(format!(
            "udp_session_tracking {} {}",
            duration(p.session_ttl),
            p.max_sessions
        ));
    }
    b.directive("proxyproto".into(), &options);
}
