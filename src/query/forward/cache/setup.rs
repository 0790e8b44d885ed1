//! The `cache` directive, with CoreDNS's options.
//!
//! ```text
//! cache [TTL] [ZONES...] {
//!     success CAPACITY [TTL] [MINTTL]     denial CAPACITY [TTL] [MINTTL]
//!     prefetch AMOUNT [[DURATION] [PERCENTAGE%]]
//!     serve_stale [DURATION] [immediate [RESPONSE_TTL [RECHECK]] | verify [TIMEOUT [RESPONSE_TTL [RECHECK]]]]
//!     servfail DURATION                   disable success|denial [ZONES...]
//!     keepttl                             serve_stale_policy prefer_positive
//! }
//! ```

use std::time::Duration;

use hickory_proto::rr::Name;

use crate::corefile::args::{zone, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::lexer::Word;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;

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
    /// The TTL a stale answer is served with (`RESPONSE_TTL`, 0).
    pub stale_ttl: u32,
    /// `verify`'s VERIFY_TIMEOUT: how long a client waits for the upstream
    /// before the stale answer is served (the refresh goes on in the
    /// background); 0: until the upstreams answer or fail.
    pub verify_timeout: Duration,
    /// After a refresh of a stale entry failed, how long the entry is
    /// served without asking upstream again (`FAILURE_RECHECK`, 0: ask
    /// every time).
    pub stale_recheck: Duration,
    pub servfail: Duration,
    pub disable_success: Option<Vec<Name>>,
    pub disable_denial: Option<Vec<Name>>,
    pub keepttl: bool,
    /// `serve_stale_policy prefer_positive`: an answer replaced by one
    /// that does not answer (NXDOMAIN, NODATA, a referral) is kept and
    /// served, stale within `serve_stale`'s window, instead.
    pub prefer_positive: bool,
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

/// The options of a `cache` block.
const OPTIONS: &[Opt<CacheConfig>] = &[
    Opt::new("success", (1, 3), |a, cfg, errors| bounds(a, &mut cfg.success, errors)),
    Opt::new("denial", (1, 3), |a, cfg, errors| bounds(a, &mut cfg.denial, errors)),
    Opt::new("prefetch", (1, 3), prefetch),
    Opt::new("serve_stale", (0, 5), serve_stale),
    Opt::new("serve_stale_policy", (1, 1), |a, cfg, errors| {
        if cfg.prefer_positive {
            errors.push(ConfigError::new(
                a.pos(),
                "serve_stale_policy can only be specified once",
            ));
        } else if a.args[0].text.eq_ignore_ascii_case("prefer_positive") {
            cfg.prefer_positive = true;
        } else {
            let why = format!("serve_stale_policy: '{}' is not prefer_positive", a.args[0].text);
            errors.push(ConfigError::new(&a.args[0].pos, why));
        }
    }),
    Opt::new("servfail", (1, 1), |a, cfg, errors| match a.duration(0, errors) {
        Some(t) if t <= Duration::from_secs(300) => cfg.servfail = t,
        Some(_) => errors.push(ConfigError::new(&a.args[0].pos, "servfail: at most 5m")),
        None => {}
    }),
    Opt::new("disable", (1, MANY), disable),
    Opt::new("keepttl", (0, 0), |_, cfg, _| cfg.keepttl = true),
];

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
        stale_ttl: 0,
        verify_timeout: Duration::ZERO,
        stale_recheck: Duration::ZERO,
        servfail: Duration::from_secs(5),
        disable_success: None,
        disable_denial: None,
        keepttl: false,
        prefer_positive: false,
    };
    let mut args = d.args.iter().peekable();
    if let Some((w, ttl)) = args.peek().and_then(|w| Some((*w, w.text.parse::<i64>().ok()?))) {
        args.next();
        match u32::try_from(ttl) {
            Ok(ttl) if ttl > 0 => (cfg.success.max_ttl, cfg.denial.max_ttl) = (ttl, ttl),
            _ => errors.push(ConfigError::new(
                &w.pos,
                format!("cache: TTL {ttl} must be at least 1 second"),
            )),
        }
    }
    // `cache {}`: the lexer reads `{}` as a word; CoreDNS accepts it
    // (TestSetup/1) and it reads as an empty block, the defaults.
    let empty_block = |w: &&Word| {
        !w.quoted && w.text == "{}" && d.options.is_empty() && d.args.last().is_some_and(|l| std::ptr::eq(l, *w))
    };
    cfg.zones = args
        .filter(|w| !empty_block(w))
        .filter_map(|w| zone(w, errors))
        .collect();
    options::read("cache", &d.options, OPTIONS, &mut cfg, errors);
    if let Some(policy) = d.options.iter().find(|l| l.name.text == "serve_stale_policy") {
        if cfg.prefer_positive && cfg.serve_stale.is_none() {
            errors.push(ConfigError::new(
                &policy.name.pos,
                "serve_stale_policy requires serve_stale",
            ));
        }
    }
    Some(cfg)
}

/// `success|denial CAPACITY [TTL] [MINTTL]`.
fn bounds(a: &Args<'_>, b: &mut Bounds, errors: &mut Vec<ConfigError>) {
    b.capacity = a.parse(0, "a capacity", errors).unwrap_or(b.capacity);
    if a.args.len() > 1 {
        b.max_ttl = a.parse(1, "a TTL in seconds", errors).unwrap_or(b.max_ttl);
    }
    if a.args.len() > 2 {
        b.min_ttl = a.parse(2, "a TTL in seconds", errors).unwrap_or(b.min_ttl);
    }
}

/// `prefetch AMOUNT [[DURATION] [PERCENTAGE%]]`.
fn prefetch(a: &Args<'_>, cfg: &mut CacheConfig, errors: &mut Vec<ConfigError>) {
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

/// `disable success|denial [ZONES...]`.
fn disable(a: &Args<'_>, cfg: &mut CacheConfig, errors: &mut Vec<ConfigError>) {
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

/// `serve_stale [DURATION [immediate [RESPONSE_TTL [RECHECK]] | verify
/// [TIMEOUT [RESPONSE_TTL [RECHECK]]]]]`, CoreDNS's words in its order.
fn serve_stale(a: &Args<'_>, cfg: &mut CacheConfig, errors: &mut Vec<ConfigError>) {
    let window = match a.args.first() {
        None => Duration::from_secs(3600),
        Some(_) => match a.duration(0, errors) {
            Some(w) => w,
            None => return,
        },
    };
    let mode = match a.args.get(1).map(|w| w.text.to_lowercase()) {
        None => StaleMode::Immediate,
        Some(m) if m == "immediate" => StaleMode::Immediate,
        Some(m) if m == "verify" => StaleMode::Verify,
        Some(other) => {
            errors.push(ConfigError::new(
                &a.args[1].pos,
                format!("serve_stale: '{other}' is not immediate or verify"),
            ));
            return;
        }
    };
    let mut at = 2;
    if mode == StaleMode::Verify && a.args.len() > 2 {
        cfg.verify_timeout = a.duration(2, errors).unwrap_or_default();
        at = 3;
    } else if a.args.len() > 4 {
        errors.push(ConfigError::new(
            &a.args[4].pos,
            "serve_stale: immediate takes at most RESPONSE_TTL and RECHECK",
        ));
        return;
    }
    stale_times(a, at, cfg, errors);
    cfg.serve_stale = Some((window, mode));
}

/// `serve_stale`'s `RESPONSE_TTL [RECHECK]`, from word `at` on.
fn stale_times(a: &Args<'_>, at: usize, cfg: &mut CacheConfig, errors: &mut Vec<ConfigError>) {
    if a.args.len() > at {
        match a.duration(at, errors) {
            Some(t) if t.subsec_nanos() != 0 => errors.push(ConfigError::new(
                &a.args[at].pos,
                "serve_stale: the response TTL must be a whole number of seconds",
            )),
            Some(t) => match u32::try_from(t.as_secs()) {
                Ok(s) => cfg.stale_ttl = s,
                Err(_) => errors.push(ConfigError::new(
                    &a.args[at].pos,
                    "serve_stale: response TTL out of range",
                )),
            },
            None => {}
        }
    }
    if a.args.len() > at + 1 {
        match a.duration(at + 1, errors) {
            Some(r) if r > Duration::from_secs(300) => errors.push(ConfigError::new(
                &a.args[at + 1].pos,
                "serve_stale: the failure recheck cannot exceed 5m",
            )),
            Some(r) => cfg.stale_recheck = r,
            None => {}
        }
    }
}
