//! `k8s_external [ZONE...] { apex APEX; ttl TTL; headless; fallthrough [ZONES...] }`:
//! Services' external addresses under an outside zone. Needs the block's
//! `kubernetes` directive (its store), checked with the whole block
//! (`Setup::check`). Printed for `clusterdns check` by [`print`].

use hickory_proto::rr::Name;

use crate::corefile::args::zone;
use crate::corefile::blocks::Directive;
use crate::corefile::lexer::Pos;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;
use crate::corefile::words::{names, with, Block};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct K8sExternalConfig {
    pub zones: Vec<Name>,
    /// The relative name holding the zone's name server (`dns`): `ns1.<apex>.<zone>`.
    pub apex: Name,
    pub ttl: u32,
    /// Headless services answer their ready endpoints.
    pub headless: bool,
    /// `None`: no fallthrough; `Some(empty)`: every zone.
    pub fallthrough: Option<Vec<Name>>,
    /// Where the directive is written (for the block-level check).
    pub pos: Pos,
}

impl K8sExternalConfig {
    /// Whether an NXDOMAIN for `qname` passes to the next plugin instead.
    pub fn falls_through(&self, qname: &Name) -> bool {
        self.fallthrough
            .as_ref()
            .is_some_and(|zones| zones.is_empty() || zones.iter().any(|z| z.zone_of(qname)))
    }
}

/// `check`'s lines: every option with its value, defaults written out.
pub(crate) fn print(b: &mut Block, e: &K8sExternalConfig) {
    let mut options = vec![format!("apex {}", e.apex), format!("ttl {}", e.ttl)];
    options.extend(e.headless.then(|| "headless".to_string()));
    options.extend(e.fallthrough.as_ref().map(|z| with("fallthrough", &names(z))));
    b.directive(with("k8s_external", &names(&e.zones)), &options);
}

/// Parses a `k8s_external` directive; `block_zones` are the server block's.
pub fn parse(d: &Directive, block_zones: &[Name], errors: &mut Vec<ConfigError>) -> K8sExternalConfig {
    let mut zones: Vec<Name> = d.args.iter().filter_map(|w| zone(w, errors)).collect();
    if d.args.is_empty() {
        zones = block_zones.to_vec();
    }
    let mut cfg = K8sExternalConfig {
        zones,
        apex: Name::from_ascii("dns").unwrap_or_default(),
        ttl: 5,
        headless: false,
        fallthrough: None,
        pos: d.name.pos.clone(),
    };
    options::read("k8s_external", &d.options, OPTIONS, &mut cfg, errors);
    cfg
}

/// The options of a `k8s_external` block.
const OPTIONS: &[Opt<K8sExternalConfig>] = &[
    Opt::new("apex", (1, 1), |a, cfg, errors| {
        let text = a.args[0].text.trim_end_matches('.');
        match Name::from_ascii(text) {
            Ok(n) if !text.is_empty() && !text.contains('*') => cfg.apex = n.to_lowercase(),
            _ => errors.push(ConfigError::new(
                &a.args[0].pos,
                format!("k8s_external: apex '{}' is not a DNS name", a.args[0].text),
            )),
        }
    }),
    Opt::new("ttl", (1, 1), |a, cfg, errors| {
        match a.parse::<u32>(0, "a number of seconds", errors) {
            Some(t) if t <= 3600 => cfg.ttl = t,
            Some(t) => errors.push(ConfigError::new(
                &a.args[0].pos,
                format!("k8s_external: ttl {t} is out of range 0..3600"),
            )),
            None => {}
        }
    }),
    Opt::new("headless", (0, 0), |_, cfg, _| cfg.headless = true),
    Opt::new("fallthrough", (0, MANY), |a, cfg, errors| {
        cfg.fallthrough = Some(a.args.iter().filter_map(|w| zone(w, errors)).collect())
    }),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::{loaded as load, one_error_each};

    fn external(body: &str) -> Result<K8sExternalConfig, Vec<String>> {
        let text = format!(
            "example.org:53 cluster.local:53 {{\n    kubernetes cluster.local {{\n        snapshot x.yaml\n    }}\n    {body}\n}}\n"
        );
        let setup = |c: &crate::config::Config| {
            let s = c.servers[0].setup("k8s_external").expect("k8s_external");
            (&**s as &dyn std::any::Any)
                .downcast_ref::<K8sExternalConfig>()
                .cloned()
        };
        load(&text).map(|c| setup(&c).expect("k8s_external"))
    }

    #[test]
    fn defaults_zones_and_options() {
        let e = external("k8s_external").expect("valid");
        let zones: Vec<String> = e.zones.iter().map(ToString::to_string).collect();
        assert_eq!(
            zones,
            ["example.org.", "cluster.local."],
            "the block's zones by default"
        );
        assert_eq!(
            (e.apex.to_string(), e.ttl, e.headless, e.fallthrough),
            ("dns".into(), 5, false, None)
        );
        let e = external("k8s_external Example.ORG {\n        apex Ns.Ext\n        ttl 60\n        headless\n        fallthrough in-addr.arpa\n    }").expect("valid");
        assert_eq!(e.zones[0].to_string(), "example.org.");
        assert_eq!((e.apex.to_string(), e.ttl, e.headless), ("ns.ext".into(), 60, true));
        let name = |s: &str| Name::from_ascii(s).expect("name");
        assert!(e.falls_through(&name("4.3.2.1.in-addr.arpa.")) && !e.falls_through(&name("a.example.org.")));
        let e = external("k8s_external example.org {\n        fallthrough\n    }").expect("valid");
        assert!(e.falls_through(&name("a.example.org.")));
    }

    #[test]
    fn every_bad_argument_is_reported_with_its_position() {
        let cases: &[(&str, &str)] = &[
            (
                "k8s_external exa..mple",
                "/tmp/Corefile:5:18: 'exa..mple' is not a valid zone name",
            ),
            (
                "k8s_external {\n        apex\n    }",
                "/tmp/Corefile:6:9: 'apex' takes exactly 1 argument, got 0",
            ),
            (
                "k8s_external {\n        apex a b\n    }",
                "/tmp/Corefile:6:16: 'apex' takes exactly 1 argument, got 2",
            ),
            (
                "k8s_external {\n        apex *.x\n    }",
                "/tmp/Corefile:6:14: k8s_external: apex '*.x' is not a DNS name",
            ),
            (
                "k8s_external {\n        ttl\n    }",
                "/tmp/Corefile:6:9: 'ttl' takes exactly 1 argument, got 0",
            ),
            (
                "k8s_external {\n        ttl soon\n    }",
                "/tmp/Corefile:6:13: 'ttl': 'soon' is not a number of seconds",
            ),
            (
                "k8s_external {\n        ttl 3601\n    }",
                "/tmp/Corefile:6:13: k8s_external: ttl 3601 is out of range 0..3600",
            ),
            (
                "k8s_external {\n        headless yes\n    }",
                "/tmp/Corefile:6:18: 'headless' takes no arguments, got 1",
            ),
            (
                "k8s_external {\n        fallthrough exa..mple\n    }",
                "/tmp/Corefile:6:21: 'exa..mple' is not a valid zone name",
            ),
            (
                "k8s_external {\n        resync 30s\n    }",
                "/tmp/Corefile:6:9: k8s_external: unknown option 'resync'",
            ),
            (
                "k8s_external\n    k8s_external",
                "/tmp/Corefile:6:5: k8s_external: only one per server block",
            ),
        ];
        one_error_each(cases, external);
    }

    #[test]
    fn without_the_kubernetes_directive_it_is_an_error() {
        let errors = load(".:53 {\n    k8s_external example.org\n}\n").expect_err("needs kubernetes");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("/tmp/Corefile:2:5: k8s_external: needs a kubernetes directive"),
            "{errors:?}"
        );
    }
}
