//! `loadbalance [round_robin] { prefer CIDR... }` and `loadbalance weighted
//! WEIGHTFILE { reload DURATION (30s; 0s never) }` (the file is read by
//! `weights.rs`).

use std::path::Path;
use std::time::Duration;

use crate::corefile::args::{Args, Net};
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;

/// `loadbalance`: addresses shuffled, then those in `prefer`'s networks
/// first (in the order the networks are listed); or, with `weighted`, one
/// address drawn by its weight put first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadbalanceConfig {
    pub prefer: Vec<Net>,
    pub weighted: Option<std::sync::Arc<crate::query::reply::loadbalance::weights::Weights>>,
}

impl LoadbalanceConfig {
    /// Whether only round robin is done (no `prefer`, not `weighted`):
    /// the forms that shuffle bytes in place (direct writes, cache hits) may.
    pub fn plain(&self) -> bool {
        self.prefer.is_empty() && self.weighted.is_none()
    }

    /// Whether the answer to a question of type `qtype` is reordered:
    /// `weighted` touches A, AAAA and SRV answers only, as CoreDNS.
    pub fn touches(&self, qtype: hickory_proto::rr::RecordType) -> bool {
        use hickory_proto::rr::RecordType::{A, AAAA, SRV};
        self.weighted.is_none() || matches!(qtype, A | AAAA | SRV)
    }
}

/// `loadbalance [round_robin] { prefer CIDR... }` or
/// `loadbalance weighted WEIGHTFILE { reload DURATION }` (relative to `dir`).
pub fn loadbalance(d: &Directive, dir: &Path, errors: &mut Vec<ConfigError>) -> LoadbalanceConfig {
    let a = Args::from(d);
    let mut cfg = LoadbalanceConfig::default();
    if a.count(0, 2, errors) {
        match a.args.first().map(|w| w.text.as_str()) {
            None => {}
            Some("round_robin") if a.args.len() == 1 => {}
            Some("weighted") => return weighted(d, &a, dir, errors),
            Some("round_robin") => errors.push(ConfigError::new(
                &a.args[1].pos,
                "loadbalance: round_robin takes no argument",
            )),
            Some(other) => errors.push(ConfigError::new(
                &a.args[0].pos,
                format!("loadbalance: unknown policy '{other}' (supported: round_robin, weighted)"),
            )),
        }
    }
    let prefer: &[Opt<LoadbalanceConfig>] = &[Opt::new("prefer", (0, MANY), |o, cfg, errors| {
        for w in o.args {
            match Net::parse(&w.text) {
                Some(net) => cfg.prefer.push(net),
                None => errors.push(ConfigError::new(
                    &w.pos,
                    format!("loadbalance: prefer: '{}' is not a CIDR (e.g. 10.0.0.0/8)", w.text),
                )),
            }
        }
    })];
    options::read("loadbalance", &d.options, prefer, &mut cfg, errors);
    cfg
}

/// `weighted WEIGHTFILE { reload DURATION }`: the block takes `reload`
/// only (as CoreDNS: `prefer` is round_robin's); the file is read now.
fn weighted(d: &Directive, a: &Args<'_>, dir: &Path, errors: &mut Vec<ConfigError>) -> LoadbalanceConfig {
    let Some(file) = a.args.get(1) else {
        errors.push(ConfigError::new(
            &a.args[0].pos,
            "loadbalance: weighted needs a weight file (loadbalance weighted WEIGHTFILE)",
        ));
        return LoadbalanceConfig::default();
    };
    let mut reload = Some(Duration::from_secs(30));
    let options: &[Opt<Option<Duration>>] = &[Opt::new("reload", (1, 1), |o, reload, errors| {
        *reload = o.duration(0, errors)
    })];
    let before = errors.len();
    options::read("loadbalance weighted", &d.options, options, &mut reload, errors);
    let Some(reload) = reload.filter(|_| errors.len() == before) else {
        return LoadbalanceConfig::default();
    };
    match crate::query::reply::loadbalance::weights::Weights::load(dir.join(&file.text), reload) {
        Ok(w) => LoadbalanceConfig {
            prefer: Vec::new(),
            weighted: Some(w),
        },
        Err(e) => {
            errors.push(ConfigError::new(&file.pos, e));
            LoadbalanceConfig::default()
        }
    }
}
