//! `secondary [ZONES...] { transfer from ADDRESS...; catalog [MEMBERS...];
//! fallthrough [ZONES...] }`: zones taken in by AXFR from a primary
//! (CoreDNS's `secondary`). Without ZONES the block's zones are. An address
//! is `IP`, `IP:PORT` or `[IPv6]:PORT` (port 53 by default); `transfer from`
//! may be written more than once, the addresses tried in order. `catalog`
//! makes the zones RFC 9432 catalog zones whose member zones are served
//! too; MEMBERS (each with the names below it) bound which members are
//! taken, all when none are written (as CoreDNS: several `catalog` lines
//! add up, and a bare one takes all).

use std::net::{IpAddr, SocketAddr};

use hickory_proto::rr::Name;

use crate::corefile::args::{zones, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::lexer::Word;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;
use crate::query::plugins::file::setup::FileConfig;

/// The port a primary is asked on when its address names none.
pub const PORT: u16 = 53;

/// One `secondary` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecondaryConfig {
    /// As written, or the block's zones.
    pub zones: Vec<Name>,
    /// The primaries, tried in order.
    pub from: Vec<SocketAddr>,
    /// `fallthrough [ZONES...]`: NXDOMAIN for these names (all when empty)
    /// goes on to the next plugin.
    pub fallthrough: Option<Vec<Name>>,
    /// `catalog [MEMBERS...]`: the zones are catalog zones; their members
    /// under these names are served (all of them when empty).
    pub catalog: Option<Vec<Name>>,
}

impl SecondaryConfig {
    /// The zones as the `file` plugin serves them (no file, no reload).
    pub fn as_file(&self) -> FileConfig {
        FileConfig {
            path: std::path::PathBuf::new(),
            zones: self.zones.clone(),
            reload: std::time::Duration::ZERO,
            reload_by_mtime: false,
            fallthrough: self.fallthrough.clone(),
        }
    }
}

/// The options of a `secondary` block.
const OPTIONS: &[Opt<SecondaryConfig>] = &[
    Opt::new("transfer", (1, MANY), transfer),
    Opt::new("fallthrough", (0, MANY), |a, cfg, errors| {
        cfg.fallthrough = Some(zones(a.args, errors))
    }),
    Opt::new("catalog", (0, MANY), catalog),
];

/// Parses one `secondary` directive; `block_zones` are the server block's.
pub fn parse(d: &Directive, block_zones: &[Name], errors: &mut Vec<ConfigError>) -> SecondaryConfig {
    let mut cfg = SecondaryConfig {
        zones: zones(&d.args, errors),
        from: Vec::new(),
        fallthrough: None,
        catalog: None,
    };
    if d.args.is_empty() {
        cfg.zones = block_zones.to_vec();
    }
    options::read("secondary", &d.options, OPTIONS, &mut cfg, errors);
    if !d.options.iter().any(|l| l.name.text == "transfer") {
        errors.push(ConfigError::new(
            &d.name.pos,
            "secondary: secondary zones require a transfer from property ('transfer from ADDRESS...')",
        ));
    }
    cfg
}

/// `transfer from ADDRESS...` (`transfer to` is the `transfer` plugin's).
fn transfer(a: &Args<'_>, cfg: &mut SecondaryConfig, errors: &mut Vec<ConfigError>) {
    let (word, addresses) = (&a.args[0], &a.args[1..]);
    let wrong = match word.text.as_str() {
        "from" if addresses.is_empty() => "'transfer from' takes at least one address".to_string(),
        "from" => {
            cfg.from.extend(addresses.iter().filter_map(|w| address(w, errors)));
            return;
        }
        "to" => "'transfer to' is not an option of secondary: send the zone on with the transfer \
                 plugin (`transfer { to ADDRESS }` in the block)"
            .to_string(),
        other => format!("unknown property '{other}' (write 'transfer from ADDRESS...')"),
    };
    errors.push(ConfigError::new(&word.pos, format!("secondary: {wrong}")));
}

/// `IP`, `IP:PORT` or `[IPv6]:PORT`; not `*`.
fn address(w: &Word, errors: &mut Vec<ConfigError>) -> Option<SocketAddr> {
    let text = w.text.as_str();
    let parsed = text
        .parse::<IpAddr>()
        .map(|ip| SocketAddr::new(ip, PORT))
        .or_else(|_| text.parse::<SocketAddr>());
    let wrong = match parsed {
        Ok(addr) => return Some(addr),
        Err(_) if text == "*" => "can't use '*' in transfer from".to_string(),
        Err(_) => format!("'{text}' is not an IP address, IP:PORT or [IPv6]:PORT"),
    };
    errors.push(ConfigError::new(&w.pos, format!("secondary: {wrong}")));
    None
}

/// `catalog [MEMBERS...]`, added to an earlier line's: a bare one (now or
/// before) takes every member.
fn catalog(a: &Args<'_>, cfg: &mut SecondaryConfig, errors: &mut Vec<ConfigError>) {
    let mut members = Vec::new();
    for w in a.args {
        let name = Name::from_ascii(&w.text).ok().filter(|_| !w.text.contains(':'));
        match name {
            Some(mut n) => {
                n.set_fqdn(true);
                members.push(n.to_lowercase());
            }
            None => errors.push(ConfigError::new(
                &w.pos,
                format!("secondary: 'catalog' member zone '{}' is not a domain name", w.text),
            )),
        }
    }
    let before = cfg.catalog.take();
    let takes_all = members.is_empty() || before.as_ref().is_some_and(Vec::is_empty);
    let mut taken = before.unwrap_or_default();
    if takes_all {
        taken.clear();
    }
    for m in members.into_iter().filter(|_| !takes_all) {
        if !taken.contains(&m) {
            taken.push(m);
        }
    }
    cfg.catalog = Some(taken);
}

#[cfg(test)]
mod tests {
    use crate::config::tests::loaded as load;

    /// `check`'s `catalog` line of a `secondary` block, if any.
    fn catalog(options: &str) -> Option<String> {
        let text = format!(".:53 {{\nsecondary catalog.example {{\ntransfer from 127.0.0.1\n{options}\n}}\n}}\n");
        let c = load(&text).expect("loads");
        let printed = c.servers[0].printed("file");
        printed
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("catalog"))
            .map(String::from)
    }

    /// CoreDNS's TestSecondaryParse/1-5: the member zones kept (none: all).
    #[test]
    fn catalog_lines_add_up_as_coredns_reads_them() {
        let rows = [
            ("", None),
            ("catalog", Some("catalog")),
            (
                "catalog EXAMPLE.ORG internal.example",
                Some("catalog example.org. internal.example."),
            ),
            (
                "catalog example.org EXAMPLE.ORG\ncatalog internal.example",
                Some("catalog example.org. internal.example."),
            ),
            ("catalog example.org\ncatalog", Some("catalog")),
            ("catalog\ncatalog example.org", Some("catalog")),
        ];
        for (options, want) in rows {
            assert_eq!(catalog(options).as_deref(), want, "{options}");
        }
    }
}
