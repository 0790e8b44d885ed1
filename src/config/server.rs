//! The typed configuration one load produces: the process-wide settings
//! ([`Config`]) and each server block with what its directives hold
//! ([`Server`]).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use hickory_proto::rr::Name;

use crate::config::transport;
use crate::config::{listeners, nodelocal};
use crate::corefile::lexer;
use crate::dnstap::setup as dnstap;
use crate::kubernetes::KubernetesConfig;
use crate::query::errors::setup as errors;
use crate::query::forward::cache::setup as cache;
use crate::query::forward::setup as forward;
use crate::query::limits::timeouts;
use crate::query::log::setup as log;
use crate::query::plugins::autopath::setup as autopath;
use crate::query::plugins::chain::Setup;
use crate::query::plugins::rewrite::setup::rule as rewrite_rule;
use crate::query::reply::loadbalance::setup as loadbalance;
use crate::query::transfer::setup as transfer;

/// The effective configuration of the whole process.
#[derive(Debug, Clone)]
pub struct Config {
    pub path: PathBuf,
    /// The port of keys that name none (`-dns.port`), kept for reloads.
    pub default_port: u16,
    pub servers: Vec<Server>,
    /// `health [ADDR]`, with its lameduck duration.
    pub health: Option<listeners::Health>,
    pub ready: Option<SocketAddr>,
    /// `ready { monitor continuously }` (default `until-ready`).
    pub ready_continuously: bool,
    pub prometheus: Option<SocketAddr>,
    /// `pprof [ADDR]`: the profiling endpoints (one per Corefile).
    pub pprof: Option<SocketAddr>,
    /// `prometheus { tls FILE }`: where it was written and what FILE says.
    pub prometheus_tls: Option<(crate::corefile::lexer::Pos, crate::metrics::web::WebConfig)>,
    /// `reload INTERVAL JITTER`.
    pub reload: Option<(std::time::Duration, std::time::Duration)>,
    /// `limits { in_flight N }`: queries being forwarded at once.
    pub in_flight: usize,
    /// `nodelocal`: the node's interface and NOTRACK rules (one per Corefile).
    pub nodelocal: Option<nodelocal::NodeLocalConfig>,
}

/// One server block: the zones it serves on a port and its plugin chain.
#[derive(Debug, Clone)]
pub struct Server {
    pub zones: Vec<Name>,
    pub port: u16,
    /// Addresses from `bind`; empty means every address.
    pub bind: Vec<IpAddr>,
    /// `errors`: plugin errors logged, alike ones consolidated.
    pub errors: Option<errors::ErrorsConfig>,
    pub log: Option<log::LogConfig>,
    pub kubernetes: Option<KubernetesConfig>,
    /// `forward` directives, tried in order (`next` passes on to the next).
    pub forward: Vec<forward::ForwardConfig>,
    pub cache: Option<cache::CacheConfig>,
    /// `loop`: `Some(exit)` when loops are detected.
    pub loop_detect: Option<bool>,
    /// `loadbalance`: shuffled answers, `prefer`red networks first.
    pub loadbalance: Option<loadbalance::LoadbalanceConfig>,
    /// `autopath`, with where it was written (for errors).
    pub autopath: Option<(autopath::AutopathConfig, lexer::Pos)>,
    /// Whether a directive of the block takes part in answering (CoreDNS's
    /// plugin chain is not empty): a name the chain leaves unanswered is
    /// SERVFAIL, a block without one answers REFUSED.
    pub chain: bool,
    /// `timeouts` and `limits` for TCP clients.
    pub tcp: timeouts::TcpLimits,
    /// `tsig`: keys, and the requests that must be signed.
    pub tsig: Option<crate::query::tsig::setup::TsigConfig>,
    /// `rewrite` rules, in order.
    pub rewrites: Vec<rewrite_rule::RewriteRule>,
    /// `bufsize`: the largest EDNS payload a request may advertise.
    pub bufsize: Option<u16>,
    /// `nsid`: the NSID a request that asks for it gets back.
    pub nsid: Option<String>,
    /// `header`: flags set or cleared in queries and responses.
    pub header: Option<crate::query::reply::header::Rules>,
    /// `minimal`: successful answers lose their authority and additional records.
    pub minimal: bool,
    /// `shed`: the block's `coredns_shed_dropped_total` series (`query::limits::shed`).
    pub shed: bool,
    /// The answering plugins that live in their own homes, one per
    /// directive, in the table's order.
    pub plugins: Vec<Arc<dyn Setup>>,
    /// `dnstap` directives: where queries and replies are sent as dnstap.
    pub dnstap: Vec<dnstap::DnstapConfig>,
    /// `transfer` directives: who may take the cluster zones by AXFR, and
    /// who is sent NOTIFY.
    pub transfers: Vec<transfer::TransferConfig>,
    /// `root`: where relative zone-file names resolve.
    pub root: Option<PathBuf>,
    /// `debug`: debug log lines on (process-wide while any block has it).
    pub debug: bool,
    /// `cancel`: how long a query may take in all.
    pub cancel: Option<std::time::Duration>,
    /// `multisocket`: sockets on the block's port (see `listen.sockets`).
    pub multisocket: Option<usize>,
    /// `proxyproto`: PROXY protocol headers from load balancers.
    pub proxyproto: Option<crate::query::proxyproto::Proxyproto>,
    /// The block's transport (`tls://`, `https://`) with `tls` and `https`.
    pub listen: transport::Listen,
    /// `view`: the block serves only the queries its expressions accept.
    pub view: Option<crate::query::route::view::setup::ViewConfig>,
    /// `metadata`: labels other plugins read (`view`'s `metadata()`, `log`'s `{/LABEL}`).
    pub metadata: Option<crate::query::metadata::MetadataConfig>,
}

impl Server {
    /// A block serving `zones` on `port` with no directive read yet;
    /// `chain`: whether one of its directives takes part in answering.
    pub fn new(zones: Vec<Name>, port: u16, chain: bool) -> Server {
        Server {
            zones,
            port,
            bind: Vec::new(),
            errors: None,
            log: None,
            kubernetes: None,
            forward: Vec::new(),
            cache: None,
            loop_detect: None,
            loadbalance: None,
            autopath: None,
            chain,
            tcp: timeouts::TcpLimits::default(),
            tsig: None,
            rewrites: Vec::new(),
            bufsize: None,
            nsid: None,
            header: None,
            minimal: false,
            shed: false,
            plugins: Vec::new(),
            dnstap: Vec::new(),
            transfers: Vec::new(),
            root: None,
            debug: false,
            cancel: None,
            multisocket: None,
            proxyproto: None,
            listen: transport::Listen::default(),
            view: None,
            metadata: None,
        }
    }
}

impl Config {
    /// Whether any block has `debug`.
    pub fn debug(&self) -> bool {
        self.servers.iter().any(|s| s.debug)
    }
}

impl Server {
    /// Adds an answering plugin's setup; a later one of the same directive
    /// replaces the earlier (as in CoreDNS for these).
    pub fn plug(&mut self, setup: Arc<dyn Setup>) {
        self.plugins.retain(|p| p.name() != setup.name());
        self.plugins.push(setup);
    }

    /// The setup of the block's answering plugin `name`, if it has one.
    pub fn setup(&self, name: &str) -> Option<&Arc<dyn Setup>> {
        self.plugins.iter().find(|p| p.name() == name)
    }

    /// Whether the block has the answering plugin `name`.
    pub fn has(&self, name: &str) -> bool {
        self.plugins.iter().any(|p| p.name() == name)
    }

    /// `check`'s lines of the answering plugin `name` (empty: none).
    pub(crate) fn printed(&self, name: &str) -> String {
        let mut b = crate::corefile::words::Block(String::new());
        self.plugins
            .iter()
            .filter(|p| p.name() == name)
            .for_each(|p| p.print(&mut b));
        b.0
    }

    /// What its `cache` and `forward` are built from.
    pub fn forwarding(&self) -> crate::query::forward::Setup<'_> {
        crate::query::forward::Setup {
            forward: &self.forward,
            cache: self.cache.as_ref(),
            errors: self.errors.as_ref(),
            zones: &self.zones,
            cancel: self.cancel,
        }
    }
}
