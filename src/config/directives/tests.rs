//! The directive table itself: every name once, every name reaches its
//! parser, the options flag is what the parser gets, and the messages
//! that list the directives list them in the table's (run) order.

use super::*;
use crate::config::tests::server_block;

fn names() -> Vec<&'static str> {
    DIRECTIVES.iter().map(|s| s.name).collect()
}

#[test]
fn every_name_once() {
    let mut seen = names();
    seen.sort_unstable();
    let before = seen.len();
    seen.dedup();
    assert_eq!(seen.len(), before, "a directive is listed twice: {:?}", names());
    for n in NOT_YET.iter().chain(REFUSED.iter().map(|(n, _)| n)) {
        assert!(lookup(n).is_none(), "{n} is both implemented and not");
    }
}

/// A Corefile with the directive alone parses, or fails about its
/// arguments; never as an unknown directive.
#[test]
fn every_name_reaches_its_parser() {
    for name in names() {
        let Err(errors) = server_block(name) else {
            continue;
        };
        for e in &errors {
            assert!(
                !e.contains("unknown directive") && !e.contains("not supported yet"),
                "{name}: {e}"
            );
        }
    }
}

/// An options block is refused exactly for the directives whose flag says
/// they take none.
#[test]
fn options_flag_decides_the_options_block_error() {
    for spec in DIRECTIVES {
        let errors = server_block(&format!("{} {{\n    bogus_option 1\n}}", spec.name)).expect_err(spec.name);
        let refused = format!("/tmp/Corefile:3:5: {}: takes no options block", spec.name);
        assert_eq!(errors.contains(&refused), !spec.options, "{}: {errors:#?}", spec.name);
    }
}

#[test]
fn unknown_and_refused_directives_are_named() {
    let errors = server_block("frobnicate 1 {\n    x\n}").expect_err("frobnicate");
    assert_eq!(
        errors,
        [
            "/tmp/Corefile:2:1: unknown directive 'frobnicate' (supported: root, metadata, geoip, cancel, proxyproto, tls, https, https3, quic, grpc_server, timeouts, limits, multisocket, reload, nsid, bufsize, bind, \
          debug, trace, nodelocal, ready, health, pprof, shed, prometheus, errors, log, dnstap, local, dns64, any, chaos, loadbalance, tsig, rewrite, \
          autopath, acl, cache, header, dnssec, minimal, template, transfer, hosts, k8s_external, kubernetes, file, auto, secondary, etcd, loop, forward, grpc, erratic, whoami, sign, on, view)"
        ]
    );
    for (name, _) in REFUSED {
        let errors = server_block(name).expect_err(name);
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].starts_with(&format!("/tmp/Corefile:2:1: {name}: not supported; ")),
            "{errors:?}"
        );
    }
}
