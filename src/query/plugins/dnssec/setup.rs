//! `dnssec [ZONES...] { key file KEY...; cache_capacity CAPACITY }`, as
//! CoreDNS's setup reads it: the zones default to the server block's; each
//! key is read when the Corefile loads (`K<zone>+<alg>+<id>`, with or
//! without `.key` or `.private`, relative to the Corefile), and must be
//! able to sign one of the zones (its owner at or above it); the cache
//! holds 10000 signatures unless told. `key aws_secretsmanager` is
//! refused: there is no AWS API to test it against.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hickory_proto::rr::Name;

use super::key::{self, Key};
use crate::corefile::args::{zones, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::lexer::Word;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;
use crate::query::plugins::chain::Setup;

/// The signatures the cache holds unless told (CoreDNS's `defaultCap`).
pub const CAPACITY: usize = 10_000;

/// `dnssec`'s options.
#[derive(Debug)]
pub struct DnssecConfig {
    pub zones: Vec<Name>,
    pub keys: Arc<Vec<Key>>,
    pub capacity: usize,
}

/// What the block's lines say, before the keys are read.
struct Reading {
    dir: PathBuf,
    keys: Vec<Key>,
    capacity: usize,
}

/// `key file KEY...` of `dnssec` and `sign` (`plugin`): each KEY read
/// into `keys`, or an error at its position.
pub(super) fn read_key_files(
    plugin: &str,
    files: &[Word],
    dir: &Path,
    keys: &mut Vec<Key>,
    errors: &mut Vec<ConfigError>,
) {
    for w in files {
        match key::read(&w.text, dir) {
            Ok(k) => keys.push(k),
            Err(e) => errors.push(ConfigError::new(&w.pos, format!("{plugin}: key {}: {e}", w.text))),
        }
    }
}

/// The options of the block.
const OPTIONS: &[Opt<Reading>] = &[
    Opt::new("key", (1, MANY), |a, r, errors| {
        let (how, files) = (&a.args[0], &a.args[1..]);
        match how.text.as_str() {
            "file" if files.is_empty() => {
                errors.push(ConfigError::new(&how.pos, "dnssec: key file needs at least one KEY"));
            }
            "file" => read_key_files("dnssec", files, &r.dir, &mut r.keys, errors),
            "aws_secretsmanager" => errors.push(ConfigError::new(
                &how.pos,
                "dnssec: key aws_secretsmanager is not supported (no AWS API to read it from); use key file",
            )),
            other => errors.push(ConfigError::new(
                &how.pos,
                format!("dnssec: key '{other}': expected file or aws_secretsmanager"),
            )),
        }
    }),
    Opt::new("cache_capacity", (1, 1), |a, r, errors| {
        if let Some(n) = a.parse::<usize>(0, "capacity", errors) {
            r.capacity = n;
        }
    }),
];

/// Reads `dnssec` and its block; `block_zones` are the server block's.
pub fn parse(d: &Directive, block_zones: &[Name], dir: &Path, errors: &mut Vec<ConfigError>) -> Arc<dyn Setup> {
    let mut zones = zones(&d.args, errors);
    if zones.is_empty() {
        zones = block_zones.to_vec();
    }
    let mut r = Reading {
        dir: dir.to_path_buf(),
        keys: Vec::new(),
        capacity: CAPACITY,
    };
    options::read("dnssec", &d.options, OPTIONS, &mut r, errors);
    for k in &r.keys {
        if !zones.iter().any(|z| k.owner.zone_of(z)) {
            let message = format!(
                "dnssec: key {} (keyid: {}) can not sign any of the zones",
                k.owner, k.tag
            );
            errors.push(ConfigError::new(Args::from(d).pos(), message));
        }
    }
    Arc::new(DnssecConfig {
        zones,
        keys: Arc::new(r.keys),
        capacity: r.capacity,
    })
}
