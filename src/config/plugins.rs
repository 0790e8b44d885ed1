//! One server block from its keys and directives, and the checks that look
//! at the whole block (transfer needs something to transfer; a plugin's own
//! check, `Setup::check`, sees the others). Which directives exist and how
//! each is read is the table in `directives.rs`; the block keys are read in
//! `listeners.rs`.

use std::path::Path;

use hickory_proto::rr::Name;

use crate::config::directives::{self, Ctx};
use crate::config::listeners::key_zone_port;
pub use crate::config::listeners::Health;
use crate::config::nodelocal;
use crate::config::server::{Config, Server};
use crate::corefile::blocks::{Directive, RawBlock};
use crate::corefile::lexer::Pos;
use crate::corefile::problem::ConfigError;

/// Directives that configure the server but take no part in answering
/// (CoreDNS registers no handler for them): a block of only these has no
/// plugin chain and answers REFUSED (`test/no_plugins_test.go`).
const SETUP_ONLY: &[&str] = &[
    "bind",
    "health",
    "ready",
    "reload",
    "root",
    "debug",
    "timeouts",
    "limits",
    "tls",
    "https",
    "quic",
    "proxyproto",
    "https3",
    "grpc_server",
];

/// Builds one server block, recording process-wide listeners in `config`.
pub fn server(
    block: &RawBlock,
    default_port: u16,
    dir: &Path,
    config: &mut Config,
    errors: &mut Vec<ConfigError>,
) -> Option<Server> {
    let (zones, port) = keys(block, errors);
    let chain = block
        .directives
        .iter()
        .any(|d| !SETUP_ONLY.contains(&d.name.text.as_str()));
    let scheme = super::transport::block_scheme(block, errors);
    let mut server = Server::new(zones, port.unwrap_or(scheme.default_port(default_port)), chain);
    server.listen.scheme = scheme;
    let had_nodelocal = config.nodelocal.is_some();
    // `root` first, wherever it is written: CoreDNS sets it up before `file`.
    let (root, rest): (Vec<&Directive>, Vec<&Directive>) = block.directives.iter().partition(|d| d.name.text == "root");
    for d in root.into_iter().chain(rest) {
        let mut c = Ctx {
            server: &mut server,
            dir,
            config,
            errors,
        };
        directive(d, &mut c);
    }
    if let Some(n) = config.nodelocal.as_mut().filter(|_| !had_nodelocal) {
        nodelocal::resolve(n, &server.bind, errors);
    }
    // The answering plugins run in the table's order, whatever the order written.
    server
        .plugins
        .sort_by_key(|p| directives::DIRECTIVES.iter().position(|d| d.name == p.name()));
    needs(&server, errors);
    super::transport::needs(&server.listen, &block.open, errors);
    Some(server)
}

/// When a block has `tls { acme }`, every block answers its DNS-01
/// challenges (CoreDNS adds the solver to all server blocks), first in
/// its chain; without one, no block holds the plugin. A domain in two
/// `acme` forms with other options is an error at the later block
/// (`opens`: where each block opens).
pub fn acme_challenges(servers: &mut [Server], opens: &[&Pos], errors: &mut Vec<ConfigError>) {
    let forms: Vec<(&crate::config::acme::Acme, &Pos)> = servers
        .iter()
        .zip(opens)
        .filter_map(|(s, open)| Some((s.listen.tls.as_ref()?.acme.as_ref()?, *open)))
        .collect();
    for (i, (acme, open)) in forms.iter().enumerate() {
        let earlier = forms[..i].iter().filter(|(other, _)| other != acme);
        if let Some(d) = earlier.flat_map(|(o, _)| &o.domains).find(|d| acme.domains.contains(d)) {
            let what = format!("tls: ACME domain '{d}' is configured with conflicting options in an earlier block");
            errors.push(ConfigError::new(open, what));
        }
    }
    if forms.is_empty() {
        return;
    }
    for server in servers {
        server.plug(std::sync::Arc::new(crate::query::plugins::acme::Challenges));
        server
            .plugins
            .sort_by_key(|p| directives::DIRECTIVES.iter().position(|d| d.name == p.name()));
    }
}

/// The block's zones and the port its keys share (`None`: not written).
fn keys(block: &RawBlock, errors: &mut Vec<ConfigError>) -> (Vec<Name>, Option<u16>) {
    let mut zones = Vec::new();
    let mut port = None;
    for key in &block.keys {
        let Some((z, p)) = key_zone_port(key, errors) else {
            continue;
        };
        zones.extend(z);
        match (port, p) {
            (None, _) => port = Some(p),
            (Some(a), b) if a != b => {
                let show = |p: Option<u16>| p.map_or("default".to_string(), |p| p.to_string());
                errors.push(ConfigError::new(
                    &key.pos,
                    format!("keys of one block must share a port ({} and {})", show(a), show(b)),
                ));
            }
            _ => {}
        }
    }
    (zones, port.flatten())
}

/// What one directive needs of the others in its block: `transfer`
/// something to transfer, then each answering plugin's own check (its
/// `Setup::check`, in the table's order). (`autopath @kubernetes` without
/// a `kubernetes` of verified pods is accepted and walks nothing, as in
/// CoreDNS.)
fn needs(server: &Server, errors: &mut Vec<ConfigError>) {
    let plugins: Vec<_> = server.plugins.iter().flat_map(|p| p.transferred()).collect();
    crate::query::transfer::setup::check(
        &server.transfers,
        (server.kubernetes.as_ref(), &plugins),
        &directives::TRANSFERRED,
        errors,
    );
    let block = crate::query::plugins::chain::CheckContext {
        kubernetes: server.kubernetes.as_ref(),
    };
    server.plugins.iter().for_each(|p| p.check(&block, errors));
}

/// Reads one directive of a server block: its options block refused when
/// it takes none, then its parser; an unknown directive is an error naming it.
pub fn directive(d: &Directive, c: &mut Ctx<'_>) {
    let Some(spec) = directives::lookup(&d.name.text) else {
        return unknown(d, c.errors);
    };
    if !spec.options {
        no_options(d, c.errors);
    }
    (spec.parse)(d, c);
}

/// `NAME: takes no options block` at the block's first line, if it has one.
fn no_options(d: &Directive, errors: &mut Vec<ConfigError>) {
    if let Some(first) = d.options.first() {
        errors.push(ConfigError::new(
            &first.name.pos,
            format!("{}: takes no options block", d.name.text),
        ));
    }
}

/// A directive not in [`directives::DIRECTIVES`]: refused, not yet, or unknown.
fn unknown(d: &Directive, errors: &mut Vec<ConfigError>) {
    let n = d.name.text.as_str();
    let supported = || {
        directives::DIRECTIVES
            .iter()
            .map(|s| s.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let message = if let Some((_, why)) = directives::REFUSED.iter().find(|(name, _)| *name == n) {
        (*why).to_string()
    } else if directives::NOT_YET.contains(&n) {
        format!(
            "directive '{n}' is not supported yet by this version of clusterdns (supported: {})",
            supported()
        )
    } else {
        format!("unknown directive '{n}' (supported: {})", supported())
    };
    errors.push(ConfigError::new(&d.name.pos, message));
}
