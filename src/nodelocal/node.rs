//! The node's interface, addresses and rules while node-local mode runs:
//! set up before the listeners bind, installed once they are bound,
//! verified and restored on every `check`, torn down (or handed over) at
//! exit; and the lease that tells the instances on one node apart.

use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::firewall::Firewall;
use super::lease::{self, Lease, NodeLock, Phase};
use super::link::{LinkError, Netlink};
use super::rules;
use crate::config::nodelocal::NodeLocalConfig;
use crate::metrics::{Metrics, NODECACHE_ERRORS, RESTORED};

/// `CAP_NET_ADMIN`'s bit in `/proc/self/status`'s `CapEff`.
const CAP_NET_ADMIN: u32 = 12;

/// Why node-local mode could not start.
#[derive(Debug, thiserror::Error)]
pub enum NodeLocalError {
    #[error("nodelocal: this process lacks the NET_ADMIN capability, needed to set up interface {0} and its rules (add NET_ADMIN to the container's securityContext.capabilities, see deploy/kubernetes/node-local)")]
    NoNetAdmin(String),
    #[error("nodelocal: cannot open a netlink socket: {0}")]
    Netlink(io::Error),
    #[error("nodelocal: interface {name}: cannot {step}: {cause}{hint}")]
    Interface {
        name: String,
        step: &'static str,
        cause: io::Error,
        hint: &'static str,
    },
}

impl NodeLocalError {
    fn interface(name: &str, e: LinkError) -> Self {
        let hint = if e.source.kind() == io::ErrorKind::PermissionDenied {
            " (nodelocal needs the NET_ADMIN capability)"
        } else {
            ""
        };
        NodeLocalError::Interface {
            name: name.to_string(),
            step: e.step,
            cause: e.source,
            hint,
        }
    }
}

/// Whether this process holds `CAP_NET_ADMIN` (`None`: cannot tell).
pub fn has_net_admin() -> Option<bool> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?.trim();
    let caps = u64::from_str_radix(hex, 16).ok()?;
    Some(caps & (1 << CAP_NET_ADMIN) != 0)
}

/// The node's interface, addresses and rules, kept in place while running.
pub struct NodeLocal {
    cfg: NodeLocalConfig,
    netlink: Netlink,
    /// The NOTRACK rules and their front-end (none with `iptables off`).
    firewall: Option<Firewall>,
    pub(super) metrics: Arc<Metrics>,
    /// This instance's lease in `lockdir`; `None` when the directory is
    /// unusable (then it runs as if alone: teardown at exit).
    lease: std::sync::Mutex<Option<Lease>>,
}

impl NodeLocal {
    /// Sets up the interface and its addresses (before the listeners bind).
    pub async fn setup(cfg: NodeLocalConfig, metrics: Arc<Metrics>) -> Result<NodeLocal, NodeLocalError> {
        if has_net_admin() == Some(false) {
            return Err(NodeLocalError::NoNetAdmin(cfg.interface.clone()));
        }
        metrics.nodelocal.enabled.store(true, Relaxed);
        let netlink = Netlink::connect().map_err(NodeLocalError::Netlink)?;
        // Joined under the node lock: an instance leaving now either sees
        // this one, or has finished its teardown before the setup below.
        let guard = node_lock(&cfg.lockdir).await;
        let lease = match guard.as_ref().map(|_| Lease::join(&cfg.lockdir)) {
            Some(Ok(l)) => Some(l),
            Some(Err(e)) => {
                tracing::warn!(target: "nodelocal", "cannot join {}: {e}; running as the only instance (teardown at exit)", cfg.lockdir.display());
                None
            }
            None => {
                tracing::warn!(target: "nodelocal", "no lease without the node lock: running as the only instance (teardown at exit; another instance's teardown can remove what this one serves with)");
                None
            }
        };
        if let Some(l) = &lease {
            let others = l.others();
            tracing::info!(target: "nodelocal", "instance {} in {}; {} other instance(s) running{}", l.name(), cfg.lockdir.display(), others.len(),
                if others.is_empty() { "" } else { ": their interface and rules are kept as they are" });
        }
        let repairs = netlink.ensure(&cfg.interface, &cfg.addresses).await.map_err(|e| {
            setup_error(&metrics, e.errortype());
            NodeLocalError::interface(&cfg.interface, e)
        })?;
        drop(guard);
        tracing::info!(target: "nodelocal",
            "interface {} {} with {}",
            cfg.interface,
            if repairs.created { "created (dummy)" } else { "in place" },
            crate::corefile::args::spaced(&cfg.addresses, "")
        );
        Ok(NodeLocal {
            firewall: Firewall::choose(&cfg).await,
            cfg,
            netlink,
            metrics,
            lease: std::sync::Mutex::new(lease),
        })
    }

    /// Tells the other instances on the node what this one is doing.
    pub fn announce(&self, phase: Phase) {
        if let Some(l) = self.lease.lock().ok().as_deref().and_then(Option::as_ref) {
            l.set(phase);
        }
    }

    /// The other live instances on the node and their phases.
    pub fn others(&self) -> Vec<(String, Phase)> {
        let others = match self.lease.lock().ok().as_deref() {
            Some(Some(l)) => l.others(),
            _ => Vec::new(),
        };
        self.metrics.nodelocal.peers.store(others.len() as u64, Relaxed);
        others
    }

    /// Holds the node lock (none when `lockdir` is unusable).
    async fn lock(&self) -> Option<NodeLock> {
        let joined = matches!(self.lease.lock().ok().as_deref(), Some(Some(_)));
        match joined {
            true => node_lock(&self.cfg.lockdir).await,
            false => None,
        }
    }

    /// Installs the rules (once the listeners are bound). Failures are
    /// logged and counted; the next check retries them.
    pub async fn install(&self) {
        let Some(firewall) = &self.firewall else {
            return;
        };
        let _guard = self.lock().await;
        let pass = firewall.ensure().await;
        pass.errors.iter().for_each(|e| self.rule_error(e));
        tracing::info!(target: "nodelocal",
            "{} of {} NOTRACK/ACCEPT rules installed through {firewall} ({} already there, {} failed)",
            pass.added.len(),
            firewall.count(),
            pass.present,
            firewall.count() - pass.added.len() - pass.present
        );
    }

    /// One verify-and-restore pass; returns how many things it restored.
    pub async fn verify(&self) -> usize {
        let _guard = self.lock().await;
        let mut restored = 0;
        match self.netlink.ensure(&self.cfg.interface, &self.cfg.addresses).await {
            Ok(r) => {
                let name = &self.cfg.interface;
                if r.created || r.set_up {
                    restored += 1;
                    self.restored("interface", 1);
                    let what = if r.created {
                        "was missing, recreated"
                    } else {
                        "was down, brought up"
                    };
                    tracing::warn!(target: "nodelocal", "interface {name} {what}");
                }
                if !r.added.is_empty() {
                    restored += r.added.len();
                    self.restored("address", r.added.len() as u64);
                    tracing::warn!(target: "nodelocal", "interface {name}: addresses were missing, added back: {}", crate::corefile::args::spaced(&r.added, ""));
                }
            }
            Err(e) => {
                setup_error(&self.metrics, e.errortype());
                tracing::error!(target: "nodelocal", "{}", NodeLocalError::interface(&self.cfg.interface, e));
            }
        }
        if let Some(firewall) = &self.firewall {
            let pass = firewall.ensure().await;
            pass.errors.iter().for_each(|e| self.rule_error(e));
            for rule in &pass.added {
                restored += 1;
                self.restored("rule", 1);
                tracing::warn!(target: "nodelocal", "rule was missing, added back: {rule}");
            }
        }
        restored
    }

    /// Verifies and restores every `check` interval, until dropped.
    pub async fn keep(self: Arc<Self>) {
        let mut tick = tokio::time::interval(self.cfg.check);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            self.verify().await;
        }
    }

    /// Leaves the node: the last instance out removes the rules and the
    /// addresses (the interface too when it is a dummy link), unless
    /// `teardown off`; while another instance lives, everything stays.
    pub async fn leave(&self) {
        let guard = self.lock().await;
        let others = self.others();
        if !others.is_empty() {
            let names: Vec<&str> = others.iter().map(|(n, _)| n.as_str()).collect();
            tracing::info!(target: "nodelocal", "not tearing down: {} other instance(s) still running ({}); interface {} and its rules stay", names.len(), names.join(", "), self.cfg.interface);
        } else {
            self.teardown().await;
        }
        // Gone from the directory before the lock is released.
        if let Ok(mut lease) = self.lease.lock() {
            *lease = None;
        }
        drop(guard);
    }

    async fn teardown(&self) {
        if !self.cfg.teardown {
            tracing::info!(target: "nodelocal", "teardown off: leaving interface {} and its rules in place", self.cfg.interface);
            return;
        }
        if let Some(firewall) = &self.firewall {
            for e in firewall.remove().await {
                tracing::error!(target: "nodelocal", "teardown: {e}");
            }
        }
        match self.netlink.remove(&self.cfg.interface, &self.cfg.addresses).await {
            Ok(()) => {
                tracing::info!(target: "nodelocal", "torn down: rules and addresses of {} removed", self.cfg.interface)
            }
            Err(e) => {
                tracing::error!(target: "nodelocal", "teardown: {}", NodeLocalError::interface(&self.cfg.interface, e))
            }
        }
    }

    fn rule_error(&self, e: &rules::RuleError) {
        let kind = if e.lock() { "iptables_lock" } else { "iptables" };
        setup_error(&self.metrics, kind);
        tracing::error!(target: "nodelocal", "rule not in place, retrying in {:?}: {e}", self.cfg.check);
    }

    fn restored(&self, what: &str, n: u64) {
        if let Some(i) = RESTORED.iter().position(|w| *w == what) {
            self.metrics.nodelocal.restored[i].fetch_add(n, Relaxed);
        }
    }
}

/// Takes the node lock in `dir`, waiting for another instance's; `None`
/// (logged) when the directory is unusable.
async fn node_lock(dir: &std::path::Path) -> Option<NodeLock> {
    let owned = dir.to_path_buf();
    match tokio::task::spawn_blocking(move || lease::node_lock(&owned)).await {
        Ok(Ok(lock)) => Some(lock),
        Ok(Err(e)) => {
            tracing::warn!(target: "nodelocal", "cannot take the node lock in {}: {e}", dir.display());
            None
        }
        Err(_) => None,
    }
}

fn setup_error(metrics: &Metrics, kind: &str) {
    if let Some(i) = NODECACHE_ERRORS.iter().position(|k| *k == kind) {
        metrics.nodelocal.setup_errors[i].fetch_add(1, Relaxed);
    }
}
