//! The `grpc` directive, CoreDNS's forwarder over gRPC, read into a
//! `forward`'s configuration so it takes the same route, cache and
//! flight path; only the options CoreDNS's `grpc` has are accepted.
//!
//! ```text
//! grpc FROM TO... {                 TO: IP[:PORT] (port 53), unix://PATH or a resolv.conf file
//!     except IGNORED_NAMES...
//!     tls [CERT KEY] [CA]           0 to 3 files; the upstreams are asked over TLS
//!     tls_servername NAME           the name their certificate must carry (TLS too)
//!     policy random|round_robin|sequential        (random)
//!     fallthrough [ZONES...]        NXDOMAIN or no answer goes on to what follows
//! }
//! ```
//! At most 15 upstreams, once per server block. Without `tls` nor
//! `tls_servername` the calls go over plain HTTP/2 (h2c). As CoreDNS's
//! `grpc`: no health checks, each upstream tried once in policy order
//! within the 5 s budget of a query. A `unix://PATH` upstream is asked
//! over h2c on that unix socket (not with `tls`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::corefile::args::{zone, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;
use crate::corefile::words::{names, with, Block};
use crate::query::forward::setup::tls::{Target, Via, UNIX};
use crate::query::forward::setup::to::{from_zone, resolv_conf, socket_addr, MAX_UPSTREAMS};
use crate::query::forward::setup::{policy, ForwardConfig, GrpcOptions};

/// Parses `grpc FROM TO... { ... }`; `dir` resolves relative files.
pub fn parse(d: &Directive, dir: &Path, errors: &mut Vec<ConfigError>) -> Option<ForwardConfig> {
    let a = Args::from(d);
    if !a.count(2, usize::MAX, errors) {
        return None;
    }
    let from = from_zone(&d.args[0], errors)?;
    let mut r = Reading {
        cfg: ForwardConfig::new(from, Vec::new()),
        dir: dir.to_path_buf(),
    };
    r.cfg.grpc = Some(GrpcOptions::default());
    // CoreDNS's grpc has no health checks and asks each upstream once
    // within the query's 5 s.
    r.cfg.max_fails = 0;
    r.cfg.read_timeout = Duration::from_secs(5);
    let mut later = Vec::new();
    options::read("grpc", &d.options, OPTIONS, &mut r, &mut later);
    let mut cfg = r.cfg;
    for w in &d.args[1..] {
        for t in upstreams(&w.text, dir, &w.pos, errors) {
            if !cfg.to.contains(&t) {
                cfg.to.push(t);
            }
        }
    }
    cfg.max_connect_attempts = Some(cfg.to.len() as u32);
    errors.append(&mut later);
    tls(&mut cfg, &d.name.pos, errors);
    if cfg.to.len() > MAX_UPSTREAMS {
        let e = format!("grpc: more than {MAX_UPSTREAMS} TOs configured: {}", cfg.to.len());
        errors.push(ConfigError::new(a.pos(), e));
    }
    (!cfg.to.is_empty()).then_some(cfg)
}

/// The upstreams of one `TO`: an address (port 53), or the nameservers
/// of a resolv.conf file.
fn upstreams(text: &str, dir: &Path, pos: &crate::corefile::lexer::Pos, errors: &mut Vec<ConfigError>) -> Vec<Target> {
    let bare = text.strip_prefix("dns://").unwrap_or(text);
    let grpc = |addr| Target { addr, via: Via::Grpc };
    // `[IPv6]` without a port too, as CoreDNS takes it
    let unbracketed = bare.strip_prefix('[').and_then(|b| b.strip_suffix(']')).unwrap_or(bare);
    if let Some(addr) = socket_addr(bare).or_else(|| socket_addr(unbracketed)) {
        return vec![grpc(addr)];
    }
    if let Some(path) = text.strip_prefix("unix://") {
        if path.is_empty() {
            errors.push(ConfigError::new(pos, format!("grpc: '{text}': no socket path")));
            return Vec::new();
        }
        return vec![Target {
            addr: UNIX,
            via: Via::GrpcUnix(path.to_string()),
        }];
    }
    match std::fs::read_to_string(dir.join(bare)) {
        Ok(body) if !resolv_conf(&body).is_empty() => resolv_conf(&body).into_iter().map(grpc).collect(),
        Ok(_) => {
            errors.push(ConfigError::new(pos, format!("grpc: no nameservers found in '{text}'")));
            Vec::new()
        }
        Err(e) => {
            let e = format!("grpc: not an IP address or file '{text}': {e}");
            errors.push(ConfigError::new(pos, e));
            Vec::new()
        }
    }
}

/// The TLS client configuration when `tls` or `tls_servername` was given.
fn tls(cfg: &mut ForwardConfig, pos: &crate::corefile::lexer::Pos, errors: &mut Vec<ConfigError>) {
    let wanted = cfg.grpc.as_ref().is_some_and(|g| g.tls) || cfg.tls.servername.is_some();
    if !wanted {
        return;
    }
    if let Some(t) = cfg.to.iter().find(|t| matches!(t.via, Via::GrpcUnix(_))) {
        let e = format!("grpc: tls: '{t}': a unix socket upstream is asked over plain HTTP/2 (h2c) only");
        errors.push(ConfigError::new(pos, e));
        return;
    }
    match crate::tls::client_config(&cfg.tls.files, false) {
        Ok(c) => cfg.tls.client = Some(std::sync::Arc::new(c)),
        Err(e) => errors.push(ConfigError::new(pos, format!("grpc: tls: {e}"))),
    }
}

/// What a `grpc` block's options are read into, with the directory
/// relative files (`tls`) resolve in.
struct Reading {
    cfg: ForwardConfig,
    dir: PathBuf,
}

fn grpc(r: &mut Reading) -> &mut GrpcOptions {
    r.cfg.grpc.get_or_insert_default()
}

/// The options of a `grpc` block, in CoreDNS's README order.
const OPTIONS: &[Opt<Reading>] = &[
    Opt::new("except", (1, MANY), |a, r, errors| {
        r.cfg.except.extend(a.args.iter().filter_map(|w| zone(w, errors)))
    }),
    Opt::new("tls", (0, 3), |a, r, _| {
        r.cfg.tls.files = a.args.iter().map(|w| r.dir.join(&w.text)).collect();
        grpc(r).tls = true;
    }),
    Opt::new("tls_servername", (1, 1), |a, r, _| {
        r.cfg.tls.servername = Some(a.args[0].text.clone())
    }),
    Opt::new("policy", (1, 1), |a, r, errors| {
        r.cfg.policy = policy(a, errors).unwrap_or(r.cfg.policy);
    }),
    Opt::new("fallthrough", (0, MANY), |a, r, errors| {
        let zones = a.args.iter().filter_map(|w| zone(w, errors)).collect();
        grpc(r).fallthrough = Some(zones);
    }),
];

/// How `clusterdns check` prints a `grpc`: every option with its value,
/// so the printout loads again to the same values.
pub(crate) fn print(b: &mut Block, fw: &ForwardConfig) {
    let Some(g) = &fw.grpc else { return };
    let to: Vec<String> = fw.to.iter().map(ToString::to_string).collect();
    let mut options = Vec::new();
    if !fw.except.is_empty() {
        options.push(format!("except {}", names(&fw.except)));
    }
    if g.tls {
        let files: Vec<String> = fw.tls.files.iter().map(|p| p.display().to_string()).collect();
        options.push(with("tls", &files.join(" ")));
    }
    options.extend(fw.tls.servername.as_ref().map(|n| format!("tls_servername {n}")));
    options.push(format!("policy {}", fw.policy.name()));
    if let Some(zones) = &g.fallthrough {
        options.push(with("fallthrough", &names(zones)));
    }
    b.directive(format!("grpc {} {}", fw.from, to.join(" ")), &options);
}

#[cfg(test)]
mod tests {
    use crate::config::load_str;
    use crate::config::tests::server_block;
    use crate::query::forward::setup::tls::Via;

    const GRPC: &str = "grpc example.org 127.0.0.1:8053 [::1] {\n    except a.example.org\n    policy round_robin\n    fallthrough b.example.org\n}";

    #[test]
    fn grpc_is_read_into_a_forward_config_without_forwards_options() {
        let s = server_block(GRPC).expect("loads");
        let g = &s.forward[0];
        let to: Vec<String> = g.to.iter().map(ToString::to_string).collect();
        assert_eq!(to, ["127.0.0.1:8053", "[::1]:53"]);
        assert!(g.to.iter().all(|t| t.via == Via::Grpc));
        assert_eq!(
            (g.max_fails, g.max_connect_attempts),
            (0, Some(2)),
            "no health checks, each once"
        );
        let fall = g
            .grpc
            .as_ref()
            .and_then(|o| o.fallthrough.clone())
            .expect("fallthrough");
        assert_eq!(
            fall.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["b.example.org."]
        );
        assert!(g.tls.client.is_none(), "h2c without tls");
        let e = server_block("grpc . 127.0.0.1 {\n    max_fails 3\n}").expect_err("forward's option");
        assert!(e[0].contains("grpc: unknown option 'max_fails'"), "{e:?}");
        let tls = server_block("grpc . 127.0.0.1 {\n    tls_servername dns.example\n}").expect("loads");
        assert!(tls.forward[0].tls.client.is_some(), "tls_servername alone turns TLS on");
        let many: Vec<String> = (1..=16).map(|i| format!("127.0.0.{i}")).collect();
        let e = server_block(&format!("grpc . {}", many.join(" "))).expect_err("16 upstreams");
        assert!(e[0].contains("more than 15"), "{e:?}");
    }

    #[test]
    fn check_prints_grpc_after_forward_and_the_printout_loads_again() {
        let text = format!(".:53 {{\n{GRPC}\nforward . 127.0.0.1\n}}\n");
        let path = std::path::Path::new("/tmp/Corefile");
        let printed = load_str(path, &text, 53).expect("loads").to_string();
        let (forward, grpc) = (
            printed.find("forward . 127.0.0.1:53"),
            printed.find("grpc example.org."),
        );
        assert!(forward.zip(grpc).is_some_and(|(f, g)| f < g), "{printed}");
        assert!(
            printed.contains(
                "        except a.example.org.\n        policy round_robin\n        fallthrough b.example.org.\n"
            ),
            "{printed}"
        );
        let again = load_str(path, &printed, 53).expect("printout loads").to_string();
        assert_eq!(again, printed);
    }
}
