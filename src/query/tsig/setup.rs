//! `tsig [ZONE...] { secret NAME KEY; secrets FILE; require [QTYPE...|all|none];
//! require_opcode [OPCODE...|all|none] }` (CoreDNS's syntax). Without ZONE
//! the block's zones apply. A KEY is base64 (checked here, where CoreDNS
//! would fail each query signed with it); a key defined twice is an error.

use hickory_proto::rr::{Name, RecordType};
use std::path::PathBuf;
use std::str::FromStr;

use crate::corefile::args::{zone, zones, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::lexer::{Pos, Word};
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;

pub use super::keyfile::{KeyConfig, Secret};

/// What `require` or `require_opcode` names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Require<T> {
    pub all: bool,
    pub listed: Vec<T>,
}

impl<T: PartialEq> Require<T> {
    pub fn covers(&self, value: T) -> bool {
        self.all || self.listed.contains(&value)
    }
}

/// One `tsig` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TsigConfig {
    pub zones: Vec<Name>,
    /// `secret` lines and the keys of `secrets` files, in order.
    pub keys: Vec<KeyConfig>,
    /// `secrets` files as written, with the names of their keys (for `check`).
    pub files: Vec<(String, Vec<Name>)>,
    pub require: Require<u16>,
    pub require_opcode: Require<u8>,
}

/// The opcodes `require_opcode` names (CoreDNS's list).
pub const OPCODES: &[(&str, u8)] = &[("QUERY", 0), ("IQUERY", 1), ("STATUS", 2), ("NOTIFY", 4), ("UPDATE", 5)];

struct Reading {
    cfg: TsigConfig,
    dir: PathBuf,
}

const OPTIONS: &[Opt<Reading>] = &[
    Opt::new("secret", (2, 2), |a, r, errors| {
        let Some(name) = zone(&a.args[0], errors) else { return };
        let secret = Secret::decode(&a.args[1].text).unwrap_or_else(|| {
            // CoreDNS loads such a key and fails each request signed with it (BADSIG)
            tracing::warn!(
                target: "tsig",
                "{}: tsig: the secret of key '{name}' is not base64: every request signed with it is refused (BADSIG)",
                a.args[1].pos
            );
            Secret::unusable()
        });
        add(&mut r.cfg, name, secret, &a.args[0].pos, errors);
    }),
    Opt::new("secrets", (1, 1), |a, r, errors| {
        let path = r.dir.join(&a.args[0].text);
        let Some(keys) = super::keyfile::read(&path, &a.args[0].pos, errors) else {
            return;
        };
        let names = keys.iter().map(|(k, _)| k.name.clone()).collect();
        for (k, pos) in keys {
            add(&mut r.cfg, k.name, k.secret, &pos, errors);
        }
        r.cfg.files.push((a.args[0].text.clone(), names));
    }),
    Opt::new("require", (1, MANY), |a, r, errors| {
        r.cfg.require = require(a, errors, qtype);
    }),
    Opt::new("require_opcode", (1, MANY), |a, r, errors| {
        r.cfg.require_opcode = require(a, errors, |w| {
            OPCODES.iter().find(|(n, _)| n.eq_ignore_ascii_case(w)).map(|o| o.1)
        });
    }),
];

/// A query type by its name (`A`, `AXFR`, `IXFR`, `TYPE65`...).
fn qtype(word: &str) -> Option<u16> {
    let upper = word.to_ascii_uppercase();
    match upper.as_str() {
        "IXFR" => Some(251),
        "AXFR" => Some(252),
        "ANY" => Some(255),
        _ => (upper.strip_prefix("TYPE").and_then(|n| n.parse().ok()))
            .or_else(|| RecordType::from_str(&upper).ok().map(u16::from)),
    }
}

/// Adds a key, unless one of its name is already there.
fn add(cfg: &mut TsigConfig, name: Name, secret: Secret, pos: &Pos, errors: &mut Vec<ConfigError>) {
    if cfg.keys.iter().any(|k| k.name == name) {
        errors.push(ConfigError::new(pos, format!("tsig: key '{name}' redefined")));
        return;
    }
    cfg.keys.push(KeyConfig { name, secret });
}

/// `all`, `none` (as the first word, as CoreDNS reads them) or a list.
fn require<T>(a: &Args<'_>, errors: &mut Vec<ConfigError>, each: impl Fn(&str) -> Option<T>) -> Require<T> {
    let first = a.args[0].text.as_str();
    if first == "all" || first == "none" {
        return Require {
            all: first == "all",
            listed: Vec::new(),
        };
    }
    let what = if a.name.text == "require" {
        "query type"
    } else {
        "opcode"
    };
    let listed = (a.args.iter())
        .filter_map(|w: &Word| {
            let v = each(&w.text);
            if v.is_none() {
                errors.push(ConfigError::new(&w.pos, format!("tsig: unknown {what} '{}'", w.text)));
            }
            v
        })
        .collect();
    Require { all: false, listed }
}

/// Parses a `tsig` directive of a block of `block_zones`; relative
/// `secrets` files are read in `dir`.
pub fn parse(d: &Directive, block_zones: &[Name], dir: &std::path::Path, errors: &mut Vec<ConfigError>) -> TsigConfig {
    let zones = match zones(&d.args, errors) {
        z if z.is_empty() => block_zones.to_vec(),
        z => z,
    };
    let mut r = Reading {
        cfg: TsigConfig {
            zones,
            keys: Vec::new(),
            files: Vec::new(),
            require: Require::default(),
            require_opcode: Require::default(),
        },
        dir: dir.to_path_buf(),
    };
    options::read("tsig", &d.options, OPTIONS, &mut r, errors);
    r.cfg
}
