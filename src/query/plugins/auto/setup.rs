//! `auto [ZONES...] { directory DIR [REGEXP ORIGIN_TEMPLATE]; reload DURATION }`:
//! every zone file in DIR (and below it) whose name REGEXP matches is
//! served, its origin ORIGIN_TEMPLATE with `{N}` the N-th submatch (default
//! `db\.(.*)` and `{1}`: `db.example.com` is `example.com.`); DIR is read
//! again every `reload` (default 1m; 0: only at start). Without ZONES the
//! block's zones bound what is served (CoreDNS's `auto`). `upstream` is
//! accepted and ignored, as CoreDNS does.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hickory_proto::rr::Name;

use crate::corefile::args::{zones, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;
use crate::query::plugins::file::setup::FileConfig;

/// The longest REGEXP taken (CoreDNS's bound).
const MAX_REGEXP: usize = 10_000;

/// One `auto` directive.
#[derive(Debug, Clone)]
pub struct AutoConfig {
    /// As written, or the block's zones: names outside are not served.
    pub zones: Vec<Name>,
    /// `directory`: where zone files are looked for (relative to the
    /// Corefile's directory, or `root`).
    pub directory: PathBuf,
    /// A file name matching this gives a zone...
    pub regex: regex::Regex,
    /// ... whose origin is this, `{N}` replaced by the N-th submatch.
    pub template: String,
    /// How often the directory is read again (zero: never).
    pub reload: Duration,
}

impl AutoConfig {
    /// The zones as the `file` plugin bounds them (no file of its own).
    pub fn as_file(&self) -> FileConfig {
        FileConfig {
            path: PathBuf::new(),
            zones: self.zones.clone(),
            reload: self.reload,
            reload_by_mtime: false,
            fallthrough: None,
        }
    }
}

/// What a `directory` option gives, resolved against the directory
/// relative names are read in.
struct Reading {
    cfg: AutoConfig,
    dir: PathBuf,
    seen_directory: bool,
}

const OPTIONS: &[Opt<Reading>] = &[
    Opt::new("directory", (1, 3), directory),
    Opt::new("reload", (1, 1), |a, r, errors| {
        if a.args[0].text.starts_with('-') {
            errors.push(ConfigError::new(a.pos(), "auto: reload: invalid duration (negative)"));
            return;
        }
        r.cfg.reload = a.duration(0, errors).unwrap_or(r.cfg.reload)
    }),
    Opt::new("upstream", (0, MANY), |_, _, _| {}),
];

/// Parses one `auto` directive; `block_zones` are the server block's,
/// `dir` where a relative DIR is read.
pub fn parse(d: &Directive, block_zones: &[Name], dir: &Path, errors: &mut Vec<ConfigError>) -> AutoConfig {
    let mut reading = Reading {
        cfg: AutoConfig {
            zones: zones(&d.args, errors),
            directory: PathBuf::new(),
            regex: regex::Regex::new(r"db\.(.*)").expect("the default pattern compiles"),
            template: "${1}".into(),
            reload: Duration::from_secs(60),
        },
        dir: dir.to_path_buf(),
        seen_directory: false,
    };
    if d.args.is_empty() {
        reading.cfg.zones = block_zones.to_vec();
    }
    options::read("auto", &d.options, OPTIONS, &mut reading, errors);
    if !reading.seen_directory {
        errors.push(ConfigError::new(&d.name.pos, "auto: needs 'directory DIR'"));
    }
    reading.cfg
}

/// `directory DIR [REGEXP ORIGIN_TEMPLATE]`.
fn directory(a: &Args<'_>, r: &mut Reading, errors: &mut Vec<ConfigError>) {
    r.seen_directory = true;
    r.cfg.directory = r.dir.join(&a.args[0].text);
    match std::fs::metadata(&r.cfg.directory) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::warn!(target: "auto", "directory does not exist: {}", r.cfg.directory.display())
        }
        Err(e) => errors.push(ConfigError::new(
            &a.args[0].pos,
            format!("auto: unable to access '{}': {e}", r.cfg.directory.display()),
        )),
        Ok(_) => {}
    }
    let Some(pattern) = a.args.get(1) else {
        return;
    };
    let Some(template) = a.args.get(2) else {
        let message = "auto: 'directory DIR REGEXP' needs the ORIGIN_TEMPLATE after REGEXP";
        return errors.push(ConfigError::new(&pattern.pos, message));
    };
    let wrong = match regex::Regex::new(&pattern.text) {
        _ if pattern.text.len() > MAX_REGEXP => format!("auto: regexp too large (over {MAX_REGEXP} characters)"),
        Err(e) => {
            let e = e.to_string();
            let why = e.lines().last().unwrap_or_default().trim_start_matches("error: ");
            format!("auto: '{}' is not a regular expression: {why}", pattern.text)
        }
        Ok(re) if re.captures_len() < 2 => "auto: the regexp needs at least one sub expression".into(),
        Ok(re) => {
            r.cfg.regex = re;
            r.cfg.template = template.text.replace('{', "${");
            return;
        }
    };
    errors.push(ConfigError::new(&pattern.pos, wrong));
}
