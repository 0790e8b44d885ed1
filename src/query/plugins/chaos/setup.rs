//! `chaos [VERSION] [AUTHORS...]` (VERSION default clusterdns-<version>):
//! CH TXT `version.bind` and friends.

use std::sync::Arc;

use crate::corefile::blocks::Directive;
use crate::query::plugins::chain::Setup;

/// `chaos [VERSION] [AUTHORS...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChaosConfig {
    /// Answered for `version.bind` and `version.server`.
    pub version: String,
    /// One TXT record each for `authors.bind`.
    pub authors: Vec<String>,
}

/// Reads `chaos` (a later one replaces it).
pub fn parse(d: &Directive) -> Arc<dyn Setup> {
    Arc::new(chaos(d))
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn version_and_authors_default_or_as_written() {
        let text = ".:53 {\n chaos\n}\nb.:53 {\n chaos v9 a@x b@y\n}\n";
        let cfg = crate::config::load_str(Path::new("Corefile"), text, 53).expect("loads");
        assert!(cfg.servers[0].printed("chaos").starts_with("    chaos clusterdns-"));
        assert_eq!(cfg.servers[1].printed("chaos"), "    chaos v9 a@x b@y\n");
    }

    #[test]
    fn an_options_block_is_an_error_at_its_place() {
        let text = ".:53 {\n chaos {\n  x\n }\n}\n";
        let errors = match crate::config::load_str(Path::new("Corefile"), text, 53) {
            Ok(_) => Vec::new(),
            Err(e) => e.0.iter().map(ToString::to_string).collect(),
        };
        assert_eq!(errors, ["Corefile:3:3: chaos: takes no options block"]);
    }
}
