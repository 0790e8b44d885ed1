//! `secondary [ZONES...] { transfer from ADDRESS...; fallthrough [ZONES...] }`:
//! zones taken in by AXFR from a primary (CoreDNS's `secondary`). Without
//! ZONES the block's zones are. An address is `IP`, `IP:PORT` or
//! `[IPv6]:PORT` (port 53 by default); `transfer from` may be written more
//! than once, the addresses tried in order. `catalog` (RFC 9432 catalog
//! zones) is refused with its reason.

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
    Opt::refused("catalog", |a, _, errors| {
        errors.push(ConfigError::new(
            a.pos(),
            "secondary: 'catalog' (RFC 9432 catalog zones) is not supported yet; \
             list each member zone in a `secondary` of its own",
        ))
    }),
];

/// Parses one `secondary` directive; `block_zones` are the server block's.
pub fn parse(d: &Directive, block_zones: &[Name], errors: &mut Vec<ConfigError>) -> SecondaryConfig {
    let mut cfg = SecondaryConfig {
        zones: zones(&d.args, errors),
        from: Vec::new(),
        fallthrough: None,
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
