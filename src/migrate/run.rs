//! `clusterdns migrate`: read the input, rewrite it, check that the result
//! loads as `clusterdns check` would load it, and print it, or print why
//! not with every error at its place in the input.
//!
//! ```text
//! clusterdns migrate [FILE | -conf FILE | -] [--domain DOMAIN]
//! ```
//! Exit codes: 0 printed, 64 cannot be migrated (or bad usage).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::configmap::{self, Source};
use super::print::{render, LineMap};
use super::{corefile, defaults, doc, kubedns};
use crate::corefile::lexer::Pos;
use crate::corefile::problem::ConfigError;

pub const USAGE: &str = "usage: clusterdns migrate [FILE | -conf FILE | -] [--domain DOMAIN]";
const EXIT_CONFIG: u8 = 64;

/// A migrated Corefile.
#[derive(Debug, Clone)]
pub struct Migrated {
    pub text: String,
    /// How many `# migrate:` notes it carries.
    pub changes: usize,
    /// What the input was: "a Corefile", "a CoreDNS ConfigMap", ...
    pub input: &'static str,
}

/// Migrates `text`, read from `path` (`domain`: the cluster domain of a
/// kube-dns ConfigMap).
pub fn migrate(path: &Path, text: &str, domain: &str) -> Result<Migrated, Vec<ConfigError>> {
    migrate_unsorted(path, text, domain).map_err(|mut errors| {
        errors.sort_by(|a, b| (&a.pos.file, a.pos.line, a.pos.col).cmp(&(&b.pos.file, b.pos.line, b.pos.col)));
        errors
    })
}

fn migrate_unsorted(path: &Path, text: &str, domain: &str) -> Result<Migrated, Vec<ConfigError>> {
    let file: Arc<str> = Arc::from(path.display().to_string());
    let source = configmap::read(&file, text).map_err(|e| vec![e])?;
    let (doc, input, errors) = match source {
        Source::Corefile { text, shift, name } => {
            let input = if shift != (0, 0) || *name != *file {
                "a CoreDNS ConfigMap"
            } else {
                "a Corefile"
            };
            let mut doc = doc::parse(&name, &text, shift)?;
            let mut errors = Vec::new();
            corefile::rewrite(&mut doc, &mut errors);
            defaults::split_forwards(&mut doc, &mut errors);
            // Written for an older CoreDNS: what kubeadm's upgrades since
            // would have added, too. A Corefile CoreDNS 1.14 loads as it
            // is stays as it is.
            if doc.changed() {
                defaults::add(&mut doc);
            }
            (doc, input, errors)
        }
        Source::KubeDns(entries) => {
            let top = Pos {
                file: file.clone(),
                line: 1,
                col: 1,
            };
            (
                kubedns::generate(&entries, domain, &top)?,
                "a kube-dns ConfigMap",
                Vec::new(),
            )
        }
    };
    let (text, map) = render(&doc);
    // What could not be rewritten was left out: the rest is checked too,
    // so that one run reports every error.
    let mut errors = errors;
    errors.extend(validate(path, &text, &map).err().unwrap_or_default());
    if !errors.is_empty() {
        return Err(errors);
    }
    let changes = text
        .lines()
        .filter(|l| l.trim_start().starts_with("# migrate:"))
        .count();
    Ok(Migrated { text, changes, input })
}

/// Loads `text` as `clusterdns check` would, beside `path` (so `import`
/// finds its files); errors are moved back to the input.
fn validate(path: &Path, text: &str, map: &LineMap) -> Result<(), Vec<ConfigError>> {
    let out = path.with_file_name("Corefile (migrated)");
    let out_name = out.display().to_string();
    match crate::config::load_str(&out, text, 53) {
        Ok(_) => Ok(()),
        Err(errors) => Err(errors
            .0
            .into_iter()
            .map(|mut e| {
                if *e.pos.file == *out_name {
                    if let Some(p) = map.source(e.pos.line, e.pos.col) {
                        e.pos = p;
                    }
                }
                e
            })
            .collect()),
    }
}

/// The command: arguments after `migrate`; prints to stdout and stderr.
pub fn main(args: &[String]) -> u8 {
    let (path, domain) = match parse_args(args) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return 0;
        }
        Err(msg) => {
            eprintln!("clusterdns migrate: {msg}\n{USAGE}");
            return EXIT_CONFIG;
        }
    };
    let text = match read(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}:0:0: cannot read: {e}", path.display());
            return EXIT_CONFIG;
        }
    };
    match migrate(&path, &text, &domain) {
        Ok(m) => {
            print!("{}", m.text);
            eprintln!(
                "clusterdns migrate: {} from {}, {} change(s); the result loads",
                path.display(),
                m.input,
                m.changes
            );
            0
        }
        Err(errors) => {
            for e in &errors {
                eprintln!("{e}");
            }
            eprintln!(
                "clusterdns migrate: {} cannot be migrated: {} error(s); nothing printed",
                path.display(),
                errors.len()
            );
            EXIT_CONFIG
        }
    }
}

fn read(path: &Path) -> std::io::Result<String> {
    if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        return Ok(s);
    }
    std::fs::read_to_string(path)
}

/// `Ok(None)`: help was asked for.
fn parse_args(args: &[String]) -> Result<Option<(PathBuf, String)>, String> {
    let mut path = None;
    let mut domain = "cluster.local".to_string();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with('-') => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or(format!("{name} needs {what}"))
        };
        match name {
            "-h" | "--help" | "-help" => return Ok(None),
            "-conf" | "--conf" => path = Some(PathBuf::from(value("a file")?)),
            "-domain" | "--domain" => domain = value("a domain")?.trim_end_matches('.').to_string(),
            "-" => path = Some(PathBuf::from("-")),
            p if !p.starts_with('-') && path.is_none() => path = Some(PathBuf::from(p)),
            _ => return Err(format!("unknown argument '{arg}'")),
        }
    }
    let labels = domain.split('.');
    let valid = !domain.is_empty()
        && labels
            .clone()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    if !valid {
        return Err(format!("--domain '{domain}' is not a domain name"));
    }
    let path = path.ok_or("needs the file to migrate (a Corefile or a ConfigMap; - for stdin)")?;
    Ok(Some((path, domain)))
}
