//! The conntrack-bypass rules through one front-end, chosen at start
//! (`nodelocal { rules iptables|nftables|auto }`): node-cache's iptables
//! rules ([`super::rules`]) or our own nftables table
//! ([`super::nftables`]). `auto` follows kube-proxy: nftables when its
//! nftables-mode tables are on the node, iptables otherwise.

use std::fmt;

use crate::config::nodelocal::{NodeLocalConfig, RulesMode};

use super::nftables::{self, Notrack};
use super::rules::{self, Iptables, Rule, RuleError};

/// The rules and how they are programmed.
pub enum Firewall {
    Iptables { ipt: Iptables, rules: Vec<Rule> },
    Nftables { rules: Vec<Notrack> },
}

impl fmt::Display for Firewall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Firewall::Iptables { ipt, .. } => write!(f, "{}", ipt.backend),
            Firewall::Nftables { .. } => write!(f, "nftables (table inet {})", nftables::TABLE),
        }
    }
}

/// What one pass over the rules did.
#[derive(Default)]
pub struct Pass {
    /// Rules added (missing before), described for the log.
    pub added: Vec<String>,
    pub present: usize,
    pub errors: Vec<RuleError>,
}

impl Firewall {
    /// The front-end `cfg` asks for (none with `iptables off`).
    pub async fn choose(cfg: &NodeLocalConfig) -> Option<Firewall> {
        if !cfg.iptables {
            return None;
        }
        let nft = match cfg.rules {
            RulesMode::Iptables => false,
            RulesMode::Nftables => true,
            RulesMode::Auto => match nftables::kube_proxy_uses_nftables().await {
                Ok(kube_proxy) => {
                    tracing::info!(target: "nodelocal", "rules auto: kube-proxy's nftables tables {}: using {}",
                        if kube_proxy { "found" } else { "not found" },
                        if kube_proxy { "nftables" } else { "iptables" });
                    kube_proxy
                }
                Err(e) => {
                    tracing::warn!(target: "nodelocal", "rules auto: cannot ask nftables ({e}): using iptables");
                    false
                }
            },
        };
        if nft {
            // iptables-nft shows the node's nftables rules, ours among them
            super::commands::point_logged(&cfg.lockdir, rules::Backend::Nft);
            return Some(Firewall::Nftables {
                rules: nftables::notrack_rules(&cfg.addresses, cfg.port, cfg.health_port),
            });
        }
        let backend = rules::detect().await;
        tracing::info!(target: "nodelocal", "iptables backend: {backend}");
        super::commands::point_logged(&cfg.lockdir, backend);
        Some(Firewall::Iptables {
            ipt: Iptables { backend },
            rules: rules::rules(&cfg.addresses, cfg.port, cfg.health_port),
        })
    }

    /// How many rules there are.
    pub fn count(&self) -> usize {
        match self {
            Firewall::Iptables { rules, .. } => rules.len(),
            Firewall::Nftables { rules } => rules.len(),
        }
    }

    /// Adds what is missing.
    pub async fn ensure(&self) -> Pass {
        let mut pass = Pass::default();
        match self {
            Firewall::Iptables { ipt, rules } => {
                for rule in rules {
                    match ipt.ensure(rule).await {
                        Ok(true) => pass.added.push(rule.to_string()),
                        Ok(false) => pass.present += 1,
                        Err(e) => pass.errors.push(e),
                    }
                }
            }
            Firewall::Nftables { rules } => match nftables::ensure(rules).await {
                Ok(missing) => {
                    pass.added = (0..missing)
                        .map(|_| format!("a notrack rule of table inet {}", nftables::TABLE))
                        .collect();
                    pass.present = rules.len() - missing;
                }
                Err(e) => pass.errors.push(e),
            },
        }
        pass
    }

    /// The rules not in place, described (nothing changed).
    pub async fn missing(&self) -> Result<Vec<String>, RuleError> {
        match self {
            Firewall::Iptables { ipt, rules } => {
                let mut missing = Vec::new();
                for rule in rules {
                    if !ipt.exists(rule).await? {
                        missing.push(rule.to_string());
                    }
                }
                Ok(missing)
            }
            Firewall::Nftables { rules } => {
                let n = nftables::missing(rules).await?;
                Ok((0..n)
                    .map(|_| format!("a notrack rule of table inet {}", nftables::TABLE))
                    .collect())
            }
        }
    }

    /// Removes every rule; the errors.
    pub async fn remove(&self) -> Vec<RuleError> {
        match self {
            Firewall::Iptables { ipt, rules } => {
                let mut errors = Vec::new();
                for rule in rules {
                    if let Err(e) = ipt.delete(rule).await {
                        errors.push(e);
                    }
                }
                errors
            }
            Firewall::Nftables { .. } => nftables::delete().await.err().into_iter().collect(),
        }
    }
}
