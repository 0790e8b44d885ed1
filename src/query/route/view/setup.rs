//! `view`: the condition on which a server block serves a query (CoreDNS's
//! `plugin/view`, for split horizons).
//!
//! ```text
//! view NAME {
//!     expr EXPRESSION        all must be true; none: always true
//! }
//! ```
//!
//! One per server block. EXPRESSION is the expr language of
//! [`crate::corefile::expr`], compiled at load: `name()`, `type()`,
//! `class()`, `client_ip()`, `incidr(ip, cidr)`, `proto()`, `port()`,
//! `metadata(label)` and the rest. A value that is not `true`, or a run
//! that fails, is false (as CoreDNS).

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::expr::{self, Program};
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;

/// One `view`: its name (the `view` label of `coredns_dns_*`, the
/// `view/name` metadata) and its conditions.
#[derive(Debug, Clone)]
pub struct ViewConfig {
    pub name: String,
    pub exprs: Vec<Program>,
}

/// Reads `view NAME { expr ... }` into `view` (an error when the block
/// has one already).
pub fn parse(d: &Directive, view: &mut Option<ViewConfig>, errors: &mut Vec<ConfigError>) {
    if view.is_some() {
        errors.push(ConfigError::new(&d.name.pos, "view: only one per server block"));
        return;
    }
    let a = Args::from(d);
    if !a.count(1, 1, errors) {
        return;
    }
    let mut cfg = ViewConfig {
        name: a.args[0].text.clone(),
        exprs: Vec::new(),
    };
    let table: &[Opt<ViewConfig>] = &[Opt::new("expr", (1, MANY), |a, c, e| {
        c.exprs.extend(expr::compile_words("view", a.args, a.pos(), &[], e));
    })];
    options::read("view", &d.options, table, &mut cfg, errors);
    *view = Some(cfg);
}

#[cfg(test)]
mod tests {
    use crate::config::tests::server_block;

    /// CoreDNS's plugin/view/setup_test.go TestSetup, each row in a block.
    #[test]
    fn setup_rows_as_coredns() {
        let ok = [
            ("view example {\n expr name() == 'example.com.'\n}", 1),
            ("view example {\n expr incidr(client_ip(), '10.0.0.0/24')\n}", 1),
            (
                "view example {\n expr name() == 'example.com.'\n expr name() == 'example2.com.'\n}",
                2,
            ),
        ];
        for (text, n) in ok {
            let server = server_block(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
            let view = server.view.as_ref().expect("view");
            assert_eq!((view.name.as_str(), view.exprs.len()), ("example", n), "{text}");
        }
        let bad = [
            "view",
            "view example {\n expr invalid expression\n}",
            "view x {\n foo bar\n}\n",
            "view a { }\nview b { }\n",
        ];
        for text in bad {
            assert!(server_block(text).is_err(), "{text}");
        }
    }
}
