//! The small plugins CoreDNS places at the edge of the chain: `bufsize`
//! (caps the EDNS payload a request advertises), `chaos` (CH TXT
//! `version.bind` and friends) and `local` (localhost and the loopback,
//! zero and broadcast reverse zones answered here, never forwarded).
//!
//! ```text
//! bufsize [SIZE]                    SIZE 512..=4096, default 1232
//! chaos [VERSION] [AUTHORS...]      VERSION default clusterdns-<version>
//! local [{ localhost_prefix on|off }]
//! ```

use super::args::Args;
use super::blocks::Directive;
use super::options::{self, Opt};
use super::ConfigError;

/// `bufsize` without a size: the DNS flag day 2020 payload.
pub const BUFSIZE_DEFAULT: u16 = 1232;

/// `bufsize [SIZE]`: the largest EDNS payload a request may advertise.
pub fn bufsize(d: &Directive, errors: &mut Vec<ConfigError>) -> Option<u16> {
    let a = Args::from(d);
    if !a.count(0, 1, errors) {
        return None;
    }
    let Some(w) = a.args.first() else {
        return Some(BUFSIZE_DEFAULT);
    };
    match w.text.parse::<u16>() {
        Ok(n) if (512..=4096).contains(&n) => Some(n),
        _ => {
            errors.push(ConfigError::new(
                &w.pos,
                format!("bufsize: '{}' is not a size between 512 and 4096", w.text),
            ));
            None
        }
    }
}

/// `chaos [VERSION] [AUTHORS...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChaosConfig {
    /// Answered for `version.bind` and `version.server`.
    pub version: String,
    /// One TXT record each for `authors.bind`.
    pub authors: Vec<String>,
}

pub fn chaos(d: &Directive) -> ChaosConfig {
    let mut words = d.args.iter().map(|w| w.text.clone());
    let version = words
        .next()
        .unwrap_or_else(|| format!("clusterdns-{}", env!("CARGO_PKG_VERSION")));
    let mut authors: Vec<String> = words.collect();
    if d.args.len() <= 1 {
        authors = env!("CARGO_PKG_AUTHORS")
            .split(':')
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect();
    }
    ChaosConfig { version, authors }
}

/// `local [{ localhost_prefix on|off }]`: whether `localhost.<anything>`
/// (the legacy prefix form) is answered too, besides `*.localhost.`.
pub fn local(d: &Directive, errors: &mut Vec<ConfigError>) -> bool {
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
        match super::super::load_str(Path::new("Corefile"), text, 53) {
            Ok(_) => Vec::new(),
            Err(e) => e.0.iter().map(|e| e.to_string().replace("Corefile:", "")).collect(),
        }
    }

    #[test]
    fn defaults_and_values() {
        let text = ".:53 {\n bufsize\n chaos\n local\n}\nb.:53 {\n bufsize 4096\n chaos v9 a@x b@y\n local {\n  localhost_prefix off\n }\n}\n";
        let cfg = super::super::load_str(Path::new("Corefile"), text, 53).expect("loads");
        let (a, b) = (&cfg.servers[0], &cfg.servers[1]);
        assert_eq!((a.bufsize, b.bufsize), (Some(1232), Some(4096)));
        assert!(a.chaos.as_ref().is_some_and(|c| c.version.starts_with("clusterdns-")));
        assert_eq!(b.chaos.as_ref().map(|c| c.authors.len()), Some(2));
        assert_eq!((a.local, b.local), (Some(true), Some(false)));
    }

    #[test]
    fn every_bad_argument_has_its_position() {
        let text = ".:53 {\n bufsize 511\n bufsize 4097\n bufsize big\n bufsize 512 1024\n local here\n local {\n  localhost_prefix maybe\n  localhost_prefix\n  other 1\n }\n chaos {\n  x\n }\n}\n";
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
            "13:3: chaos: takes no options block",
        ];
        assert_eq!(got, want);
    }
}
