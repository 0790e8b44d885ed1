//! The `cache` directive, with CoreDNS's options.
//!
//! ```text
//! cache [TTL] [ZONES...] {
//!     success CAPACITY [TTL] [MINTTL]     denial CAPACITY [TTL] [MINTTL]
//!     prefetch AMOUNT [[DURATION] [PERCENTAGE%]]
//!     serve_stale [DURATION] [immediate|verify]
//!     servfail DURATION                   disable success|denial [ZONES...]
//!     keepttl
//! }
//! ```

use std::time::Duration;

use hickory_proto::rr::Name;

use super::args::{zone, Args};
use super::blocks::Directive;
use super::ConfigError;

/// Capacity and TTL bounds of one kind of answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub capacity: usize,
    pub max_ttl: u32,
    pub min_ttl: u32,
}

/// When a stale entry is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaleMode {
    /// Serve the stale answer at once and refresh it in the background.
    Immediate,
    /// Ask upstream first; serve the stale answer only if that fails.
    Verify,
}

/// Typed options of one `cache` directive.
#[derive(Debug, Clone)]
pub struct CacheConfig {
    /// Zones cached; empty: the server block's zones.
    pub zones: Vec<Name>,
    pub success: Bounds,
    pub denial: Bounds,
    /// `(hits, window, percentage of the TTL left)`.
    pub prefetch: Option<(u32, Duration, u8)>,
    pub serve_stale: Option<(Duration, StaleMode)>,
    pub servfail: Duration,
    pub disable_success: Option<Vec<Name>>,
    pub disable_denial: Option<Vec<Name>>,
    pub keepttl: bool,
}

impl CacheConfig {
    /// Whether answers for `qname` of this kind may be cached.
    pub fn caches(&self, qname: &Name, denial: bool) -> bool {
        let in_zone = self.zones.is_empty() || self.zones.iter().any(|z| z.zone_of(qname));
        let disabled = if denial {
            &self.disable_denial
        } else {
            &self.disable_success
        };
        let off = disabled
            .as_ref()
            .is_some_and(|zs| zs.is_empty() || zs.iter().any(|z| z.zone_of(qname)));
        in_zone && !off
    }
}

const CAPACITY: usize = 9984;

pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> Option<CacheConfig> {
    let mut cfg = CacheConfig {
        zones: Vec::new(),
        success: Bounds {
            capacity: CAPACITY,
            max_ttl: 3600,
            min_ttl: 5,
        },
        denial: Bounds {
            capacity: CAPACITY,
            max_ttl: 1800,
            min_ttl: 5,
        },
        prefetch: None,
        serve_stale: None,
        servfail: Duration::from_secs(5),
        disable_success: None,
        disable_denial: None,
        keepttl: false,
    };
    let mut args = d.args.iter().peekable();
    if let Some(ttl) = args.peek().and_then(|w| w.text.parse::<u32>().ok()) {
        args.next();
        cfg.success.max_ttl = ttl;
        cfg.denial.max_ttl = ttl;
    }
    cfg.zones = args.filter_map(|w| zone(w, errors)).collect();
    for line in &d.options {
        let a = Args::from(line);
        match a.name.text.as_str() {
            name @ ("success" | "denial") if a.count(1, 3, errors) => {
                let b = if name == "success" {
                    &mut cfg.success
                } else {
                    &mut cfg.denial
                };
                b.capacity = a.parse(0, "a capacity", errors).unwrap_or(b.capacity);
                if a.args.len() > 1 {
                    b.max_ttl = a.parse(1, "a TTL in seconds", errors).unwrap_or(b.max_ttl);
                }
                if a.args.len() > 2 {
                    b.min_ttl = a.parse(2, "a TTL in seconds", errors).unwrap_or(b.min_ttl);
                }
            }
            "prefetch" if a.count(1, 3, errors) => {
                let amount = a.parse(0, "a number of hits", errors).unwrap_or(1);
                let mut window = Duration::from_secs(60);
                let mut percent = 10u8;
                for (i, w) in a.args.iter().enumerate().skip(1) {
                    if let Some(p) = w.text.strip_suffix('%') {
                        match p.parse::<u8>() {
                            Ok(p) if (1..=100).contains(&p) => percent = p,
                            _ => errors.push(ConfigError::new(&w.pos, "prefetch: percentage must be 1%..100%")),
                        }
                    } else if let Some(d) = a.duration(i, errors) {
                        window = d;
                    }
                }
                cfg.prefetch = Some((amount, window, percent));
            }
            "serve_stale" if a.count(0, 2, errors) => {
                let window = if a.args.is_empty() {
                    Some(Duration::from_secs(3600))
                } else {
                    a.duration(0, errors)
                };
                let mode = match a.args.get(1).map(|w| w.text.as_str()) {
                    None | Some("immediate") => StaleMode::Immediate,
                    Some("verify") => StaleMode::Verify,
                    Some(other) => {
                        errors.push(ConfigError::new(
                            &a.args[1].pos,
                            format!("serve_stale: '{other}' is not immediate or verify"),
                        ));
                        StaleMode::Immediate
                    }
                };
                cfg.serve_stale = window.map(|w| (w, mode));
            }
            "servfail" if a.count(1, 1, errors) => match a.duration(0, errors) {
                Some(t) if t <= Duration::from_secs(300) => cfg.servfail = t,
                Some(_) => errors.push(ConfigError::new(&a.args[0].pos, "servfail: at most 5m")),
                None => {}
            },
            "disable" if a.count(1, usize::MAX, errors) => {
                let zones: Vec<Name> = a.args[1..].iter().filter_map(|w| zone(w, errors)).collect();
                match a.args[0].text.as_str() {
                    "success" => cfg.disable_success = Some(zones),
                    "denial" => cfg.disable_denial = Some(zones),
                    other => errors.push(ConfigError::new(
                        &a.args[0].pos,
                        format!("disable: '{other}' is not success or denial"),
                    )),
                }
            }
            "keepttl" if a.count(0, 0, errors) => cfg.keepttl = true,
            "success" | "denial" | "prefetch" | "serve_stale" | "servfail" | "disable" | "keepttl" => {}
            other => errors.push(ConfigError::new(
                a.pos(),
                format!(
                    "cache: unknown option '{other}' (supported: success, denial, prefetch, serve_stale, servfail, \
                     disable, keepttl)"
                ),
            )),
        }
    }
    Some(cfg)
}
