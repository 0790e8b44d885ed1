//! `dns64 [PREFIX] { prefix PREFIX; translate_all; allow_ipv4 }`: AAAA
//! records synthesized from A records (RFC 6147) under an IPv6 prefix.
//!
//! A prefix is `ADDRESS/LENGTH` with a length RFC 6052 §2.2 allows (32, 40,
//! 48, 56, 64 or 96); bits past the length are ignored, and a /96 prefix
//! must leave bits 64..71 (the "u" octet) zero.

use std::net::Ipv6Addr;

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::lexer::Word;
use crate::corefile::options::{self, Opt};
use crate::corefile::problem::ConfigError;

/// RFC 6052's well-known prefix.
pub const WELL_KNOWN: (Ipv6Addr, u8) = (Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96);

/// The prefix lengths RFC 6052 defines.
const LENGTHS: [u8; 6] = [32, 40, 48, 56, 64, 96];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dns64Config {
    /// The prefix, its bits past `length` zeroed.
    pub prefix: Ipv6Addr,
    pub length: u8,
    /// Synthesize even when the name has AAAA records of its own.
    pub translate_all: bool,
    /// Also for clients that asked over IPv4 (default: IPv6 clients only).
    pub allow_ipv4: bool,
}

/// The options of a `dns64` block.
const OPTIONS: &[Opt<Dns64Config>] = &[
    Opt::new("prefix", (1, 1), |a, cfg, errors| {
        if let Some((prefix, length)) = prefix(&a.args[0], errors) {
            (cfg.prefix, cfg.length) = (prefix, length);
        }
    }),
    Opt::new("translate_all", (0, 0), |_, cfg, _| cfg.translate_all = true),
    Opt::new("allow_ipv4", (0, 0), |_, cfg, _| cfg.allow_ipv4 = true),
];

/// Parses a `dns64` directive.
pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> Dns64Config {
    let a = Args::from(d);
    let mut cfg = Dns64Config {
        prefix: WELL_KNOWN.0,
        length: WELL_KNOWN.1,
        translate_all: false,
        allow_ipv4: false,
    };
    if a.count(0, 1, errors) {
        if let Some((prefix, length)) = d.args.first().and_then(|w| prefix(w, errors)) {
            (cfg.prefix, cfg.length) = (prefix, length);
        }
    }
    options::read("dns64", &d.options, OPTIONS, &mut cfg, errors);
    cfg
}

/// `ADDRESS/LENGTH`: an IPv6 prefix of an RFC 6052 length.
fn prefix(w: &Word, errors: &mut Vec<ConfigError>) -> Option<(Ipv6Addr, u8)> {
    let mut fail = |message: String| {
        errors.push(ConfigError::new(&w.pos, format!("dns64: {message}")));
        None
    };
    let Some((addr, length)) = w.text.split_once('/') else {
        return fail(format!(
            "'{}' is not an IPv6 prefix (ADDRESS/LENGTH, e.g. 64:ff9b::/96)",
            w.text
        ));
    };
    let Ok(addr) = addr.parse::<Ipv6Addr>() else {
        return fail(format!("'{addr}' is not an IPv6 address"));
    };
    let length = match length.parse::<u8>() {
        Ok(n) if LENGTHS.contains(&n) => n,
        _ => {
            return fail(format!(
                "prefix length '{length}' must be one of 32, 40, 48, 56, 64, 96 (RFC 6052)"
            ))
        }
    };
    let bits = addr.to_bits() & (u128::MAX << (128 - u32::from(length)));
    if length == 96 && (bits >> 56) & 0xff != 0 {
        return fail(format!(
            "'{}': bits 64..71 of a /96 prefix must be zero (RFC 6052 §2.2)",
            w.text
        ));
    }
    Some((Ipv6Addr::from_bits(bits), length))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::{loaded as load, one_error_each};

    fn dns64(body: &str) -> Result<Dns64Config, Vec<String>> {
        let text = format!(".:53 {{\n    {body}\n}}\n");
        let setup = |c: &crate::config::Config| {
            let s = c.servers[0].setup("dns64").expect("dns64");
            (&**s as &dyn std::any::Any).downcast_ref::<Dns64Config>().cloned()
        };
        load(&text).map(|c| setup(&c).expect("a dns64 setup"))
    }

    #[test]
    fn defaults_argument_and_options() {
        let d = dns64("dns64").expect("valid");
        assert_eq!(
            (d.prefix, d.length, d.translate_all, d.allow_ipv4),
            (WELL_KNOWN.0, 96, false, false)
        );
        let d = dns64("dns64 2001:db8:1::/48").expect("valid");
        assert_eq!((d.prefix.to_string(), d.length), ("2001:db8:1::".to_string(), 48));
        let d = dns64("dns64 {\n        prefix 64:1337::9/96\n        translate_all\n        allow_ipv4\n    }")
            .expect("valid");
        assert_eq!(d.prefix.to_string(), "64:1337::", "bits past the length are ignored");
        assert!(d.translate_all && d.allow_ipv4);
    }

    #[test]
    fn every_bad_argument_is_reported_with_its_position() {
        let cases: &[(&str, &str)] = &[
            (
                "dns64 64:ff9b::",
                "/tmp/Corefile:2:11: dns64: '64:ff9b::' is not an IPv6 prefix",
            ),
            (
                "dns64 10.0.0.0/96",
                "/tmp/Corefile:2:11: dns64: '10.0.0.0' is not an IPv6 address",
            ),
            (
                "dns64 64:ff9b::/80",
                "/tmp/Corefile:2:11: dns64: prefix length '80' must be one of 32, 40, 48, 56, 64, 96",
            ),
            ("dns64 64:ff9b::/x", "/tmp/Corefile:2:11: dns64: prefix length 'x'"),
            (
                "dns64 64:ff9b:0:0:ff00::/96",
                "/tmp/Corefile:2:11: dns64: '64:ff9b:0:0:ff00::/96': bits 64..71",
            ),
            (
                "dns64 64:ff9b::/96 extra",
                "/tmp/Corefile:2:24: 'dns64' takes 0 to 1 arguments, got 2",
            ),
            (
                "dns64 {\n        prefix\n    }",
                "/tmp/Corefile:3:9: 'prefix' takes exactly 1 argument, got 0",
            ),
            (
                "dns64 {\n        prefix ::/129\n    }",
                "/tmp/Corefile:3:16: dns64: prefix length '129'",
            ),
            (
                "dns64 {\n        translate_all yes\n    }",
                "/tmp/Corefile:3:23: 'translate_all' takes no arguments, got 1",
            ),
            (
                "dns64 {\n        allow_ipv4 yes\n    }",
                "/tmp/Corefile:3:20: 'allow_ipv4' takes no arguments, got 1",
            ),
            (
                "dns64 {\n        exclude ::ffff:0:0/96\n    }",
                "/tmp/Corefile:3:9: dns64: unknown option 'exclude'",
            ),
            (
                "dns64\n    dns64",
                "/tmp/Corefile:3:5: dns64: only one per server block",
            ),
        ];
        one_error_each(cases, dns64);
    }
}
