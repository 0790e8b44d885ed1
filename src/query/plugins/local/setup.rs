//! `local [{ localhost_prefix on|off }]`: localhost and the loopback,
//! zero and broadcast reverse zones answered here, never forwarded. Its
//! tests cover `bufsize` too, the other small plugin at the chain's edge.

use std::sync::Arc;

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt};
use crate::corefile::problem::ConfigError;
use crate::query::plugins::chain::Setup;

/// `local`, as a server block holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalConfig {
    /// `localhost_prefix on`: `localhost.<anything>` is local too.
    pub prefix: bool,
}

/// Reads `local` (a later one replaces it).
pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> Arc<dyn Setup> {
    Arc::new(LocalConfig {
        prefix: local(d, errors),
    })
}

/// `local [{ localhost_prefix on|off }]`: whether `localhost.<anything>`
/// (the legacy prefix form) is answered too, besides `*.localhost.`.
fn local(d: &Directive, errors: &mut Vec<ConfigError>) -> bool {
    Args::from(d).count(0, 0, errors);
    let mut prefix = true;
    let options: &[Opt<bool>] = &[Opt::new("localhost_prefix", (1, 1), |a, prefix, errors| {
        match a.args[0].text.as_str() {
            "on" => *prefix = true,
            "off" => *prefix = false,
            other => errors.push(ConfigError::new(
                &a.args[0].pos,
                format!("local: localhost_prefix expects 'on' or 'off', got '{other}'"),
            )),
        }
    })];
    options::read("local", &d.options, options, &mut prefix, errors);
    prefix
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every error of `text` as `LINE:COL: message`.
    fn errors(text: &str) -> Vec<String> {
        match crate::config::load_str(Path::new("Corefile"), text, 53) {
            Ok(_) => Vec::new(),
            Err(e) => e.0.iter().map(|e| e.to_string().replace("Corefile:", "")).collect(),
        }
    }

    #[test]
    fn defaults_and_values() {
        let text = ".:53 {\n bufsize\n local\n}\nb.:53 {\n bufsize 4096\n local {\n  localhost_prefix off\n }\n}\n";
        let cfg = crate::config::load_str(Path::new("Corefile"), text, 53).expect("loads");
        let (a, b) = (&cfg.servers[0], &cfg.servers[1]);
        assert_eq!((a.bufsize, b.bufsize), (Some(1232), Some(4096)));
        assert!(a.printed("local").contains("localhost_prefix on"));
        assert!(b.printed("local").contains("localhost_prefix off"));
    }

    #[test]
    fn every_bad_argument_has_its_position() {
        let text = ".:53 {\n bufsize 511\n bufsize 4097\n bufsize big\n bufsize 512 1024\n local here\n local {\n  localhost_prefix maybe\n  localhost_prefix\n  other 1\n }\n}\n";
        let got = errors(text);
        let want = [
            "2:10: bufsize: '511' is not a size between 512 and 4096",
            "3:10: bufsize: '4097' is not a size between 512 and 4096",
            "4:10: bufsize: 'big' is not a size between 512 and 4096",
            "5:14: 'bufsize' takes 0 to 1 arguments, got 2",
            "6:8: 'local' takes no arguments, got 1",
            "8:20: local: localhost_prefix expects 'on' or 'off', got 'maybe'",
            "9:3: 'localhost_prefix' takes exactly 1 argument, got 0",
            "10:3: local: unknown option 'other' (supported: localhost_prefix)",
        ];
        assert_eq!(got, want);
    }
}
