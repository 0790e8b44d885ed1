//! What `clusterdns check` prints for `tls`, `https`, `quic`, `https3`
//! and `grpc_server`, and the check across server blocks that blocks
//! sharing an address share their transport (`transport.rs` reads the directives).

use super::effective::Block;
use super::server::{Config, Server};
use super::transport::{ClientAuth, Scheme, HTTPS_MAX_CONNECTIONS};
use crate::corefile::lexer::Pos;
use crate::corefile::problem::ConfigError;

/// `clusterdns check`'s line for `tls`.
pub(crate) fn print_tls(b: &mut Block, s: &Server, _: Option<&Config>) {
    let Some(t) = &s.listen.tls else {
        return;
    };
    if let Some(acme) = &t.acme {
        return b.directive("tls".into(), &super::acme::print(acme));
    }
    let mut head = format!("tls {} {}", t.cert.display(), t.key.display());
    if let Some(ca) = &t.ca {
        head.push_str(&format!(" {}", ca.display()));
    }
    let mode = match t.client_auth {
        ClientAuth::NoCert => "nocert",
        ClientAuth::VerifyIfGiven => "verify_if_given",
        ClientAuth::RequireAndVerify => "require_and_verify",
    };
    let mut options = vec![format!("client_auth {mode}")];
    options.extend(t.keylog.as_ref().map(|f| format!("keylog {}", f.display())));
    b.directive(head, &options);
}

/// `clusterdns check`'s line for `https` (its default written out in
/// every https:// block).
pub(crate) fn print_https(b: &mut Block, s: &Server, _: Option<&Config>) {
    if s.listen.scheme == Scheme::Https {
        let max = s.listen.max_connections.unwrap_or(HTTPS_MAX_CONNECTIONS);
        b.directive("https".into(), &[format!("max_connections {max}")]);
    }
}

/// `clusterdns check`'s line for `quic` (its defaults written out in
/// every quic:// block).
pub(crate) fn print_quic(b: &mut Block, s: &Server, _: Option<&Config>) {
    if s.listen.scheme == Scheme::Quic {
        let q = s.listen.quic.unwrap_or_default();
        let options = [
            format!("max_streams {}", q.max_streams),
            format!("worker_pool_size {}", q.worker_pool_size),
        ];
        b.directive("quic".into(), &options);
    }
}

/// `clusterdns check`'s line for `https3` (its defaults written out in
/// every https3:// block).
pub(crate) fn print_https3(b: &mut Block, s: &Server, _: Option<&Config>) {
    print_streams(b, s, Scheme::Https3)
}

/// `clusterdns check`'s line for `grpc_server` (its defaults written out
/// in every grpc:// block).
pub(crate) fn print_grpc_server(b: &mut Block, s: &Server, _: Option<&Config>) {
    print_streams(b, s, Scheme::Grpc)
}

fn print_streams(b: &mut Block, s: &Server, scheme: Scheme) {
    if s.listen.scheme != scheme {
        return;
    }
    let name = if scheme == Scheme::Grpc {
        "grpc_server"
    } else {
        "https3"
    };
    let l = s.listen.streams.unwrap_or_default();
    let options = [
        format!("max_streams {}", l.max_streams),
        format!("max_connections {}", l.max_connections),
    ];
    b.directive(name.into(), &options);
}

/// Blocks on one port of one address must share a transport: a `dns://`
/// and a `tls://` block on 853 would split its TCP connections. `opens`:
/// where each block opens, in the order of `servers`.
pub fn check_shared(servers: &[Server], opens: &[&Pos], errors: &mut Vec<ConfigError>) {
    for (i, (s, open)) in servers.iter().zip(opens).enumerate() {
        let clash = servers[..i]
            .iter()
            .find(|o| o.port == s.port && o.bind == s.bind && o.listen != s.listen && s.port != 0 && clash(o, s));
        if let Some(o) = clash {
            errors.push(ConfigError::new(
                open,
                format!(
                    "port {} is served as {}:// with other settings in an earlier block: blocks on one \
                     address share their scheme, tls and https settings",
                    s.port,
                    o.listen.scheme.name()
                ),
            ));
        }
    }
}

/// Whether two blocks' listeners would take the same sockets (TCP or
/// UDP): `tls://` and `quic://` share 853, one on TCP, one on UDP.
fn clash(a: &Server, b: &Server) -> bool {
    let ((a_tcp, a_udp), (b_tcp, b_udp)) = (a.listen.scheme.sockets(), b.listen.scheme.sockets());
    (a_tcp && b_tcp) || (a_udp && b_udp)
}
