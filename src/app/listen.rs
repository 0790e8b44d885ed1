//! Listener groups: built routers put in service (existing groups get the
//! new router, new ones are bound, old ones stopped), the UDP workers and
//! TCP listener of one address, the `loop` probe, and the node checks
//! that size what the listeners may hold.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};

use super::runtime::{AppError, Built, Group, GroupKey, Runtime};
use crate::admin::State;
use crate::config::transport::{Listen, Scheme};
use crate::config::Config;
use crate::metrics::Metrics;
use crate::nodelocal::handover;
use crate::query::{tcp, udp, Handler, LoopProbe, Router};

impl Runtime {
    /// Puts `built` in service: routers of existing listener groups are
    /// swapped (in-flight queries finish on the old one), new groups are
    /// bound, then groups no longer configured are stopped (an address
    /// bound anew, say with other certificates, is never without a
    /// listener; the old one closes at once, serving what it had queued).
    pub(super) fn switch(&mut self, built: Built, state: &State) -> Result<(), AppError> {
        let Built { routers, live, probes } = built;
        state.live.store(Arc::new(live));
        let gone: Vec<GroupKey> = self
            .groups
            .keys()
            .filter(|k| !routers.contains_key(*k))
            .cloned()
            .collect();
        let gone: Vec<(GroupKey, Group)> = gone
            .into_iter()
            .filter_map(|k| self.groups.remove(&k).map(|g| (k, g)))
            .collect();
        let mut result = Ok(());
        for (key, router) in routers {
            if let Some(g) = self.groups.get(&key) {
                g.handler.router.store(Arc::new(router));
                continue;
            }
            match self.open(&key, router) {
                Ok(g) => {
                    self.groups.insert(key, g);
                }
                Err(e) => result = Err(e),
            }
        }
        for (key, g) in gone {
            g.stop.store(true, Ordering::Relaxed);
            tracing::info!("closing listeners on port {} (no longer configured)", key.0);
        }
        crate::query::tcp::accept::look_at_stop_flags();
        // ACME certificates once the listeners (and their challenge answers) are up.
        let acme = self.groups.keys().filter_map(|(_, _, l)| l.tls.as_ref()?.acme.as_ref());
        self.acme.keep(acme.collect::<Vec<_>>());
        for (key, probe, zone) in probes {
            if let Some(addr) = self.groups.get(&key).and_then(|g| g.bound.first().copied()) {
                send_probe(addr, &probe, &zone, &self.groups[&key].handler);
            }
        }
        result
    }

    /// Stops every listener group. `handover`: another instance serves, so
    /// first take the UDP sockets out of their groups and answer what they
    /// hold (see [`handover`]).
    pub(super) async fn stop(&mut self, handover: bool) {
        let groups = std::mem::take(&mut self.groups);
        self.acme.keep([]);
        if handover {
            let sockets: Vec<&std::net::UdpSocket> = groups.values().flat_map(|g| &g.udp).collect();
            handover::drain_udp(&sockets, &self.metrics).await;
        }
        let mut tcp = Vec::new();
        for g in groups.values() {
            g.stop.store(true, Ordering::Relaxed);
        }
        crate::query::tcp::accept::look_at_stop_flags();
        for (_, group) in groups {
            for t in group.threads {
                let _ = tokio::task::spawn_blocking(move || t.join()).await;
            }
            if handover {
                handover::left_behind(&group.udp);
            }
            tcp.extend(group.tcp);
        }
        for t in tcp {
            let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
        }
        handover::await_forwarded(&self.metrics).await;
    }

    fn open(&self, (port, bind, transport): &GroupKey, router: Router) -> Result<Group, AppError> {
        let handler = Arc::new(Handler::new(router, self.metrics.clone()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut group = Group {
            handler,
            stop,
            threads: Vec::new(),
            bound: Vec::new(),
            udp: Vec::new(),
            tcp: Vec::new(),
        };
        for ip in listen_ips(bind) {
            let addr = SocketAddr::new(ip, *port);
            let opened = match transport.scheme {
                Scheme::Dns => listen(
                    addr,
                    transport.sockets.unwrap_or(self.workers),
                    &group.handler,
                    &group.stop,
                ),
                _ => serve_other(addr, transport, &group.handler, &group.stop),
            };
            match opened {
                Ok(Listening {
                    bound,
                    threads,
                    udp,
                    tcp,
                }) => {
                    group.threads.extend(threads);
                    group.udp.extend(udp);
                    group.tcp.push(tcp);
                    group.bound.push(bound);
                    // Kernel drops are read for the ports that take UDP.
                    if let (true, Ok(mut ports)) = (transport.scheme.sockets().1, self.metrics.udp_ports.lock()) {
                        ports.push(bound.port());
                    }
                }
                Err(e) if bind.is_empty() && ip.is_ipv6() => tracing::warn!("{e}; serving IPv4 only"),
                Err(e) => return Err(e),
            }
        }
        Ok(group)
    }
}

/// Sends the `loop` plugin's probe (`<random>.<random>.<zone> HINFO`) to
/// our own listener; if it comes back through an upstream, the block's
/// router notices.
fn send_probe(addr: SocketAddr, probe: &LoopProbe, zone: &Name, handler: &Handler) {
    let label = || Name::from_ascii(fastrand::u64(..).to_string()).unwrap_or_else(|_| Name::root());
    let Ok(name) = label().append_name(&label()).and_then(|n| n.append_name(zone)) else {
        return;
    };
    if let Ok(mut n) = probe.name.lock() {
        *n = Some(name.clone());
    }
    for block in &handler.router.load().blocks {
        if let Some(f) = &block.forwarding {
            if let Ok(mut p) = f.probe.lock() {
                p.0 = Some(name.clone());
            }
        }
    }
    let target = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => SocketAddr::from(([127, 0, 0, 1], addr.port())),
        ip if ip.is_unspecified() => SocketAddr::from((IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1]), addr.port())),
        _ => addr,
    };
    tokio::spawn(async move {
        let mut m = Message::new(fastrand::u16(..), MessageType::Query, OpCode::Query);
        m.metadata.recursion_desired = true;
        m.add_query(Query::query(name, RecordType::HINFO));
        let (Ok(bytes), Ok(socket)) = (m.to_vec(), tokio::net::UdpSocket::bind((target.ip(), 0)).await) else {
            return;
        };
        let _ = socket.send_to(&bytes, target).await;
        let mut buf = [0u8; 512];
        let _ = tokio::time::timeout(Duration::from_secs(10), socket.recv(&mut buf)).await;
    });
}

/// `clusterdns doctor`'s checks against this node, as warnings and metrics.
pub(super) fn startup_doctor(config: &Config, metrics: &Metrics) {
    let findings = crate::doctor::check(&crate::doctor::Inputs {
        root: "/".into(),
        upstream_resolv: config
            .servers
            .iter()
            .flat_map(|s| &s.forward)
            .flat_map(|f| f.files.clone())
            .collect(),
        pod_resolv: None,
        pods: None,
        sockets: Some(sockets_needed(config)),
    });
    for f in &findings {
        tracing::warn!(target: "doctor", "{}: {} (fix: {})", f.check, f.message, f.fix);
    }
    if let Ok(mut d) = metrics.doctor.lock() {
        *d = findings.iter().map(|f| (f.check, f.severity.label())).collect();
    }
}

/// Sockets the configuration may hold at once: each listener's TCP
/// connection cap, the in-flight cap, the forwarding lanes' idle UDP
/// ports, and a margin for the rest.
fn sockets_needed(config: &Config) -> u64 {
    let mut listeners: BTreeMap<GroupKey, (u64, usize)> = BTreeMap::new();
    for s in &config.servers {
        let addresses = listen_ips(&s.bind).len();
        // UDP workers: as many per address as `open` starts
        let workers = match s.listen.scheme {
            Scheme::Dns => addresses * s.listen.sockets.unwrap_or_else(super::runtime::default_workers),
            _ => 0,
        };
        listeners
            .entry((s.port, s.bind.clone(), s.listen.clone()))
            .or_insert((s.tcp.connections as u64 * addresses as u64, workers));
    }
    // Each forwarding lane (the shared ones, and each UDP worker's, twice
    // over while a reload starts new workers before the old ones stop)
    // keeps up to PORTS idle UDP ports per upstream.
    use crate::query::forward::lanes::{MAX_LANES, WORKER_LANES};
    let upstreams: usize = config.servers.iter().flat_map(|s| &s.forward).map(|f| f.to.len()).sum();
    let workers: usize = listeners.values().map(|(_, w)| w).sum();
    let lanes = MAX_LANES + (2 * workers).min(WORKER_LANES);
    let ports = (upstreams * lanes * crate::query::forward::outgoing::PORTS) as u64;
    listeners.values().map(|(tcp, _)| tcp).sum::<u64>() + config.in_flight as u64 + ports + 256
}

fn listen_ips(bind: &[IpAddr]) -> Vec<IpAddr> {
    if bind.is_empty() {
        vec![IpAddr::from([0, 0, 0, 0]), IpAddr::from([0u16; 8])]
    } else {
        bind.to_vec()
    }
}

/// One address's listeners, as [`listen`] started them.
struct Listening {
    bound: SocketAddr,
    threads: Vec<std::thread::JoinHandle<()>>,
    udp: Vec<std::net::UdpSocket>,
    tcp: tokio::task::JoinHandle<()>,
}

/// Binds UDP workers and a TCP listener on one address (the same port for
/// both, also when the port is 0) and logs both.
fn listen(
    addr: SocketAddr,
    workers: usize,
    handler: &Arc<Handler>,
    stop: &Arc<AtomicBool>,
) -> Result<Listening, AppError> {
    let udp_error = |source| AppError::Bind {
        proto: "udp",
        addr,
        source,
    };
    let in_use =
        |e: &AppError| matches!(e, AppError::Bind { source, .. } if source.kind() == std::io::ErrorKind::AddrInUse);
    // Port 0: one port for both, free of every socket (`udp::unshared`).
    let (bound, sockets, listener) = udp::unshared::bind(addr, udp_error, in_use, |at| {
        let (bound, sockets) = udp::bind_all(at, workers).map_err(udp_error)?;
        let listener = tcp::bind(bound).map_err(|source| AppError::Bind {
            proto: "tcp",
            addr: bound,
            source,
        })?;
        Ok((bound, sockets, listener))
    })?;
    let dups = sockets.iter().map(|s| s.try_clone()).collect::<Result<_, _>>();
    let udp = dups.map_err(udp_error)?;
    let threads = udp::start(sockets, handler, stop).map_err(udp_error)?;
    tracing::info!("listening on udp {bound}");
    tracing::info!("listening on tcp {bound}");
    let tcp = tokio::spawn(tcp::serve(listener, handler.clone(), stop.clone()));
    Ok(Listening {
        bound,
        threads,
        udp,
        tcp,
    })
}

/// A `tls://` or `https://` listener on one address (`serve`), as the
/// group holds it: its accept loop with the TCP ones, no UDP.
fn serve_other(
    addr: SocketAddr,
    transport: &Listen,
    handler: &Arc<Handler>,
    stop: &Arc<AtomicBool>,
) -> Result<Listening, AppError> {
    let l = crate::serve::open(addr, transport, handler, stop).map_err(|source| AppError::Bind {
        proto: transport.scheme.name(),
        addr,
        source,
    })?;
    Ok(Listening {
        bound: l.bound,
        threads: Vec::new(),
        udp: Vec::new(),
        tcp: l.task,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needed(corefile: &str) -> u64 {
        let config = crate::config::load_str(std::path::Path::new("Corefile"), corefile, 53).expect("parses");
        sockets_needed(&config)
    }

    #[test]
    fn every_udp_worker_counts_as_a_lane_twice_over() {
        use crate::query::forward::{lanes::MAX_LANES, outgoing::PORTS};
        let one = needed(".:53 {\n bind 127.0.0.1\n multisocket 3\n forward . 127.0.0.1:5300\n}\n");
        let two = needed(".:53 {\n bind 127.0.0.1 127.0.0.2\n multisocket 3\n forward . 127.0.0.1:5300\n}\n");
        let none = needed(".:53 {\n bind 127.0.0.1\n multisocket 3\n}\n");
        // 3 workers, a reload's 3 more, the shared lanes
        assert_eq!(one - none, ((MAX_LANES + 6) * PORTS) as u64);
        // the second address: 6 workers more, and its TCP cap
        let tcp = needed(".:53 {\n bind 127.0.0.1 127.0.0.2\n multisocket 3\n}\n") - none;
        assert_eq!(two - one, (6 * PORTS) as u64 + tcp);
    }
}
