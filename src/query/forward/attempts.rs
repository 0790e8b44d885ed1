//! One `forward` directive answering one query: its upstreams in policy
//! order, as CoreDNS walks them. An upstream that gives no answer (timeout,
//! refused connection) costs one connect attempt and the next is tried;
//! the walk wraps around until an answer comes, `max_connect_attempts`
//! (default twice the upstreams) attempts failed, or the 5 s budget of a
//! query is spent (`cancel` makes it shorter; an exchange in flight is cut
//! at it). An answer whose rcode is listed in `failover` is passed
//! over for the next upstream while upstreams remain untried. Upstreams
//! marked down are skipped; when all are, one is tried anyway, or none with
//! `failfast_all_unhealthy_upstreams`. A truncated UDP answer is asked
//! again over TCP when `prefer_udp` sent a TCP client's query over UDP.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, Query};

use super::block::Forwarding;
use super::directive::Forward;
use super::exchange::ExchangeError;
use super::upstream::Upstream;

/// CoreDNS's budget for one query through one `forward`.
pub(super) const BUDGET: Duration = Duration::from_secs(5);

impl Forwarding {
    /// One `forward`: its upstreams in policy order until one answers.
    /// `Err` holds why no answer came, as CoreDNS's errors plugin logs it.
    /// `asked`: the last upstream asked (the label `forward/upstream`).
    pub(super) async fn forward_one(
        &self,
        fw: &Forward,
        (request, query): (&[u8], &Query),
        tcp: bool,
        asked: &mut Option<SocketAddr>,
    ) -> Result<Message, Failed> {
        let order = fw.order();
        let n = order.len();
        let cap = fw.cfg.max_connect_attempts.unwrap_or(2 * n as u32);
        let budget = tokio::time::Instant::now() + self.budget;
        let (mut attempts, mut failovers, mut i, mut down) = (0u32, 0usize, 0usize, 0usize);
        let mut bytes = request.to_vec();
        let (mut why, mut mismatched) = (None, false);
        while tokio::time::Instant::now() < budget && (cap == 0 || attempts < cap) {
            if i >= n {
                (i, down) = (0, 0);
            }
            let mut up = &fw.upstreams[order[i]];
            i += 1;
            if !up.usable() {
                down += 1;
                if down < n {
                    continue;
                }
                self.healthcheck_broken.fetch_add(1, Ordering::Relaxed);
                let fallback = order
                    .iter()
                    .find(|j| !fw.upstreams[**j].looping.load(Ordering::Relaxed));
                match fallback {
                    Some(j) if !fw.cfg.failfast => up = &fw.upstreams[*j],
                    _ => return Err(Failed::from("no healthy proxies")),
                }
            }
            *asked = Some(up.addr);
            match self.attempt(fw, up, &mut bytes, query, (tcp, budget)).await {
                Ok(m) if fw.cfg.failover.contains(&m.metadata.response_code) && failovers + 1 < n => {
                    failovers += 1;
                }
                Ok(m) => return Ok(m),
                Err(e) => {
                    attempts += 1;
                    mismatched |= e.mismatched;
                    if down >= n {
                        return Err(Failed { mismatched, ..e }); // the one tried though all were down
                    }
                    why = Some(e);
                }
            }
        }
        let why = why.unwrap_or_else(|| Failed::from("no healthy proxies"));
        Err(Failed { mismatched, ..why })
    }

    /// One exchange with `up` (again over TCP for a truncated answer that
    /// `prefer_udp` asked over UDP); `Err` says why no answer came.
    async fn attempt(
        &self,
        fw: &Forward,
        up: &Arc<Upstream>,
        bytes: &mut [u8],
        query: &Query,
        (tcp, budget): (bool, tokio::time::Instant),
    ) -> Result<Message, Failed> {
        let mut over_tcp = tcp;
        loop {
            self.note_probe(query, up);
            let id = super::outgoing::random_id();
            if bytes.len() >= 2 {
                bytes[..2].copy_from_slice(&id.to_be_bytes());
            }
            if self.cache.is_some() {
                ask_authentic(bytes);
            }
            let deadline = (tokio::time::Instant::now() + fw.cfg.read_timeout).min(budget);
            let asked = Instant::now();
            let (got, local) = up.exchange_from(bytes, id, query, over_tcp, deadline, &fw.cfg).await;
            if let Some(taps) = &self.taps {
                let reply = got.as_ref().ok().map(|m| move || m.to_vec().unwrap_or_default());
                let reply = reply.as_ref().map(|r| r as &dyn Fn() -> Vec<u8>);
                taps.forwarded(up.addr, local, over_tcp, bytes, reply, asked);
            }
            match got {
                Ok(m) if m.metadata.truncation && !over_tcp && fw.cfg.prefer_udp && !fw.cfg.force_tcp => {
                    over_tcp = true;
                }
                Ok(m) => {
                    let slot = crate::metrics::rcode_slot(m.metadata.response_code);
                    up.durations[slot].observe(asked.elapsed().as_nanos() as u64);
                    up.fails.store(0, Ordering::Relaxed);
                    up.trim_pool(&fw.cfg);
                    return Ok(m);
                }
                Err(e) => {
                    tracing::debug!(target: "forward", "{} for {}: {e}", up.addr, query.name());
                    let why = why(&e, up.addr, over_tcp);
                    super::health::failed(up, &fw.cfg, &self.runtime, &why);
                    let mismatched = matches!(e, ExchangeError::Mismatch);
                    return Err(Failed { why, mismatched });
                }
            }
        }
    }
}

/// Why one `forward` got no answer: the text CoreDNS's errors plugin logs,
/// and whether a reply with our ID to another question (or without QR)
/// came meanwhile: then the client gets FORMERR, CoreDNS's answer to such
/// a reply, though clusterdns discarded it and waited for the real one.
#[derive(Debug)]
pub(super) struct Failed {
    pub why: String,
    pub mismatched: bool,
}

impl Failed {
    /// SERVFAIL, as in CoreDNS for no answer; FORMERR when only a wrong
    /// reply came.
    pub fn rcode(&self) -> hickory_proto::op::ResponseCode {
        use hickory_proto::op::ResponseCode;
        if self.mismatched {
            ResponseCode::FormErr
        } else {
            ResponseCode::ServFail
        }
    }
}

impl From<&str> for Failed {
    fn from(why: &str) -> Failed {
        Failed {
            why: why.to_string(),
            mismatched: false,
        }
    }
}

/// An upstream exchange's failure as the error text CoreDNS logs for it
/// (Go's net errors: `read udp ADDR: i/o timeout`).
fn why(e: &ExchangeError, addr: std::net::SocketAddr, tcp: bool) -> String {
    let proto = if tcp { "tcp" } else { "udp" };
    match e {
        ExchangeError::Timeout => format!("read {proto} {addr}: i/o timeout"),
        ExchangeError::Mismatch => {
            format!("read {proto} {addr}: i/o timeout; a reply with our ID came for another question or without QR")
        }
        ExchangeError::Io(io) if io.kind() != std::io::ErrorKind::Other => {
            format!("read {proto} {addr}: {}", io.kind())
        }
        ExchangeError::Io(io) => format!("read {proto} {addr}: {io}"),
    }
}

/// Sets AD in a request as a block that caches sends it upstream (the
/// client's own is logged and tapped as it came): the entry then keeps
/// whether the upstream vouches for the data, and each client gets AD as
/// it asks (`Echo::authentic`), as CoreDNS's cache asks.
fn ask_authentic(request: &mut [u8]) {
    if let Some(flags) = request.get_mut(3) {
        *flags |= 0x20;
    }
}
