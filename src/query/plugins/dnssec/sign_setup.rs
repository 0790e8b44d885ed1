//! `sign DBFILE [ZONES...] { key file KEY...; directory DIR }`: CoreDNS's
//! `sign`, which writes each zone of DBFILE signed ([`super::zone`]) to
//! `DIR/db.<zone>.signed` (DIR `/var/lib/coredns` unless told, relative
//! paths beside the Corefile) for `file` or `auto` to serve. Once the
//! server runs, each zone is signed at once when its signed file is
//! missing, older than six days or older than DBFILE, and checked again
//! every hour (CoreDNS resigns after six days, or when the SOA's signature
//! has 14 days left: with 32 days of validity the first comes first).
//! `key directory` is refused, as CoreDNS does not implement it either.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::rr::Name;

use super::key::Key;
use super::zone::sign_zone;
use super::zone_text::zone_text;
use crate::corefile::args::zones;
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;
use crate::corefile::words::{names, with, Block};
use crate::query::plugins::chain::{Answering, Passes, Setup};

/// A signed zone older than this is signed again.
const RESIGN: Duration = Duration::from_secs(6 * 24 * 3600);
/// How often the signed files are checked.
const CHECK: Duration = Duration::from_secs(3600);

/// `sign`'s options.
#[derive(Debug)]
pub struct SignConfig {
    pub dbfile: PathBuf,
    pub zones: Vec<Name>,
    pub keys: Arc<Vec<Key>>,
    pub directory: PathBuf,
}

struct Reading {
    dir: PathBuf,
    keys: Vec<Key>,
    directory: PathBuf,
}

const OPTIONS: &[Opt<Reading>] = &[
    Opt::new("key", (2, MANY), |a, r, errors| match a.args[0].text.as_str() {
        "file" => super::setup::read_key_files("sign", &a.args[1..], &r.dir, &mut r.keys, errors),
        "directory" => errors.push(ConfigError::new(
            &a.args[0].pos,
            "sign: key directory is not implemented (nor in CoreDNS); use key file",
        )),
        other => errors.push(ConfigError::new(
            &a.args[0].pos,
            format!("sign: key '{other}': expected file or directory"),
        )),
    }),
    Opt::new("directory", (1, 1), |a, r, _| r.directory = r.dir.join(&a.args[0].text)),
];

/// Reads `sign` and its block; `block_zones` are the server block's.
pub fn parse(d: &Directive, block_zones: &[Name], dir: &Path, errors: &mut Vec<ConfigError>) -> Arc<dyn Setup> {
    let Some((file, rest)) = d.args.split_first() else {
        errors.push(ConfigError::new(&d.name.pos, "sign: needs DBFILE"));
        return Arc::new(SignConfig::empty());
    };
    let mut zones = zones(rest, errors);
    if zones.is_empty() {
        zones = block_zones.to_vec();
    }
    let mut r = Reading {
        dir: dir.to_path_buf(),
        keys: Vec::new(),
        directory: PathBuf::from("/var/lib/coredns"),
    };
    options::read("sign", &d.options, OPTIONS, &mut r, errors);
    if r.keys.is_empty() {
        errors.push(ConfigError::new(
            &d.name.pos,
            "sign: needs at least one key (key file KEY)",
        ));
    }
    Arc::new(SignConfig {
        dbfile: dir.join(&file.text),
        zones,
        keys: Arc::new(r.keys),
        directory: r.directory,
    })
}

impl SignConfig {
    fn empty() -> SignConfig {
        SignConfig {
            dbfile: PathBuf::new(),
            zones: Vec::new(),
            keys: Arc::default(),
            directory: PathBuf::new(),
        }
    }

    /// Signs each zone whose signed file is due; logs what it did.
    fn resign_due(&self) {
        for zone in &self.zones {
            let out = self.directory.join(format!("db.{}signed", zone.to_lowercase()));
            let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
            let due = match (modified(&out), modified(&self.dbfile)) {
                (None, _) => true,
                (Some(signed), source) => {
                    source.is_some_and(|s| s > signed) || signed.elapsed().map_or(true, |age| age > RESIGN)
                }
            };
            if due {
                match self.sign(zone, &out) {
                    Ok(()) => tracing::info!(target: "sign", "signed zone {zone} in {}", out.display()),
                    Err(e) => tracing::error!(target: "sign", "signing {zone} into {}: {e}", out.display()),
                }
            }
        }
    }

    fn sign(&self, zone: &Name, out: &Path) -> Result<(), String> {
        let loaded = crate::zonefile::parse_file(&self.dbfile, zone)?;
        let now = super::sign::unix_now();
        let records = sign_zone(&loaded, &self.keys, now);
        let text = zone_text(loaded.origin(), &records, now);
        // written whole then renamed: `file` never reads half a zone
        let part = out.with_extension("signed.part");
        std::fs::write(&part, text).map_err(|e| e.to_string())?;
        std::fs::rename(&part, out).map_err(|e| e.to_string())
    }
}

impl Setup for SignConfig {
    fn name(&self) -> &'static str {
        "sign"
    }

    fn build(&self, _: &str) -> Box<dyn Answering> {
        let cfg = SignConfig {
            dbfile: self.dbfile.clone(),
            zones: self.zones.clone(),
            keys: self.keys.clone(),
            directory: self.directory.clone(),
        };
        let task = tokio::runtime::Handle::try_current().ok().map(|rt| {
            let cfg = Arc::new(cfg);
            rt.spawn(async move {
                loop {
                    let cfg = cfg.clone();
                    let _ = tokio::task::spawn_blocking(move || cfg.resign_due()).await;
                    tokio::time::sleep(CHECK).await;
                }
            })
            .abort_handle()
        });
        let held = task.map(|t| Box::new(Resigning(t)) as Box<dyn std::any::Any + Send + Sync>);
        Box::new(Passes(held))
    }

    fn print(&self, b: &mut Block) {
        let files: Vec<&str> = self.keys.iter().map(|k| k.base.as_str()).collect();
        let options = [
            format!("key file {}", files.join(" ")),
            format!("directory {}", self.directory.display()),
        ];
        let head = format!("{} {}", self.dbfile.display(), names(&self.zones));
        b.directive(with("sign", head.trim()), &options);
    }
}

/// The block's resigning task, stopped when the block's chain goes (a
/// reload builds a new one).
struct Resigning(tokio::task::AbortHandle);

impl Drop for Resigning {
    fn drop(&mut self) {
        self.0.abort();
    }
}
