//! `file DBFILE [ZONES...] { reload DURATION; reload_by_mtime; fallthrough [ZONES...]; upstream }`:
//! a zone file served for its origins (the zone file itself is read by
//! `crate::zonefile`); `upstream` is accepted and ignored, as CoreDNS does.
//! Each line is a `Line` of the block's zone plugin (`super::line`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use hickory_proto::rr::Name;

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;

/// `file`.
#[derive(Debug, Clone)]
pub struct FileConfig {
    pub path: PathBuf,
    /// Each is an origin the file is loaded for (CIDRs: their reverse zones).
    pub zones: Vec<Name>,
    /// How often the file is looked at; a new SOA serial reloads it.
    pub reload: Duration,
    /// Reload on a new modification time, whatever the serial.
    pub reload_by_mtime: bool,
    /// `fallthrough [ZONES...]`: NXDOMAIN for these names (all when empty)
    /// goes on to the next plugin.
    pub fallthrough: Option<Vec<Name>>,
}

impl FileConfig {
    /// Whether `fallthrough` applies to `qname`.
    pub fn falls_through(&self, qname: &Name) -> bool {
        self.fallthrough
            .as_ref()
            .is_some_and(|zs| zs.is_empty() || zs.iter().any(|z| z.zone_of(qname)))
    }
}

/// Parses one `file` directive; `block_zones` are the server block's.
pub fn file(d: &Directive, block_zones: &[Name], dir: &Path, errors: &mut Vec<ConfigError>) -> Option<FileConfig> {
    let a = Args::from(d);
    if !a.count(1, usize::MAX, errors) {
        return None;
    }
    let mut cfg = FileConfig {
        path: dir.join(&d.args[0].text),
        zones: crate::corefile::args::zones(&d.args[1..], errors),
        reload: Duration::from_secs(60),
        reload_by_mtime: false,
        fallthrough: None,
    };
    if cfg.zones.is_empty() {
        cfg.zones = block_zones.to_vec();
    }
    zone_loads(&cfg, a.pos(), errors);
    options::read("file", &d.options, FILE_OPTIONS, &mut cfg, errors);
    Some(cfg)
}

/// The options of a `file` block.
const FILE_OPTIONS: &[Opt<FileConfig>] = &[
    Opt::new("reload", (1, 1), |a, cfg, errors| {
        cfg.reload = a.duration(0, errors).unwrap_or(cfg.reload)
    }),
    Opt::new("reload_by_mtime", (0, 0), |_, cfg, _| cfg.reload_by_mtime = true),
    Opt::new("fallthrough", (0, MANY), |a, cfg, errors| {
        cfg.fallthrough = Some(crate::corefile::args::zones(a.args, errors))
    }),
    // CoreDNS reads and drops it ("remove soon"): CNAME targets outside the zone are
    // always looked up through the server itself, in both.
    Opt::new("upstream", (0, MANY), |_, _, _| {}),
];

/// A zone file that exists must parse, as CoreDNS refuses to start with
/// one that does not (a missing one may appear later: reloads retry it).
fn zone_loads(cfg: &FileConfig, pos: &crate::corefile::lexer::Pos, errors: &mut Vec<ConfigError>) {
    let Ok(text) = std::fs::read_to_string(&cfg.path) else {
        return;
    };
    for origin in &cfg.zones {
        if let Err(e) = crate::zonefile::parse(&text, Some(&cfg.path), origin) {
            errors.push(ConfigError::new(
                pos,
                format!("file: {} does not load for {origin}: {e}", cfg.path.display()),
            ));
        }
    }
}
