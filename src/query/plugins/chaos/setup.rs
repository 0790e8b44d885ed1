//! `chaos [VERSION] [AUTHORS...]` (VERSION default clusterdns-<version>):
//! CH TXT `version.bind` and friends.

use crate::corefile::blocks::Directive;

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
