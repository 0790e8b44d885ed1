//! `transfer`: the `kubernetes` plugin's zones (the cluster zone, and
//! `clusterset.local` with `multicluster`) and those the chain's plugins
//! offer (`ZoneSource`) sent to secondaries by AXFR over TCP, and NOTIFY
//! to them when a zone changes (CoreDNS's `transfer` plugin with those
//! plugins' `Transfer`; [`source`] reads each).
//!
//! 1. `tcp.rs` hands every whole frame asking AXFR or IXFR ([`asks`]) to
//!    [`serve`]; a request no `transfer` of the block covers, or from a
//!    client not in `to`, goes back to the query path, which answers
//!    REFUSED (as it answers every AXFR/IXFR over UDP, as CoreDNS does).
//! 2. A cluster zone is read from one snapshot ([`zone::Walk`]): SOA, the
//!    apex NS with its address records, every name the zone answers, SOA
//!    again; a plugin's zone from its own walk (`ZoneWalk`, as loaded);
//!    split into messages of at most [`BUDGET`] bytes of records, each
//!    handed to the connection's writer as it is built, so the query path
//!    never waits and a big zone is never held as records.
//! 3. IXFR is answered like AXFR, or with the SOA alone when the client
//!    already holds the current serial (RFC 1995 §2).
//! 4. [`notify`] sends NOTIFY to every `to` address but `*` when the serial
//!    changes (a new snapshot; a zone file reloaded with a new serial).

mod block;
pub mod print;

mod notify;
pub mod setup;
pub mod source;
mod stats;
pub mod zone;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use hickory_proto::serialize::binary::BinEncodable;
use tokio::sync::mpsc;

pub use stats::{render, TransferStats};

use super::plugins::chain::Chain;
use super::plugins::cluster::Cluster;
use crate::metrics::{Plugin, Served, Transport, ZoneStats};
use crate::query::transfer::setup::{transferable, TransferConfig};
use crate::query::tsig::{Signer, Stream};
pub use block::Transfer;
use block::Xfr;
use source::Source;
use stats::Request;

/// Bytes of records (uncompressed, an upper bound of what they take in
/// the message) per transfer message: with the header and question the
/// message stays under TCP's 65,535.
pub const BUDGET: usize = 60_000;

impl Transfer {
    /// The `transfer` of a block whose `kubernetes` plugin is `cluster`
    /// and whose chain is `chain`; `None` without `transfer` directives.
    /// Starts its NOTIFY tasks. A zone two serve is the first's (CoreDNS
    /// asks kubernetes first).
    pub fn start(
        transfers: &[TransferConfig],
        cluster: Option<&Cluster>,
        chain: &Chain,
        server: String,
    ) -> Option<Arc<Transfer>> {
        let forward = transferable(cluster.map(|c| &*c.cfg), &[]);
        let mut sources: Vec<Source> = (cluster.into_iter().flat_map(|c| c.zones.iter()))
            .filter(|z| forward.contains(&&z.name))
            .map(|z| Source::Cluster(Box::new(z.clone())))
            .collect();
        for source in chain.zone_sources() {
            if !sources.iter().any(|s| s.name() == source.name()) {
                sources.push(Source::Plugin(source));
            }
        }
        let zones: Vec<Xfr> = sources
            .into_iter()
            .filter_map(|source| {
                let cfg = covering(transfers, source.name()).or_else(|| source.open().then(open))?;
                Some(Xfr { source, cfg })
            })
            .collect();
        if zones.is_empty() {
            return None;
        }
        let names = zones.iter().map(|x| x.source.name().to_string()).collect();
        let transfer = Arc::new(Transfer {
            cluster: cluster.map(|c| Cluster::new(c.cfg.clone(), c.store.clone())),
            zones,
            stats: Arc::new(TransferStats::new(server, names)),
        });
        notify::spawn(&transfer);
        Some(transfer)
    }
}

/// What a zone sent without a `transfer` directive is sent under: to any
/// client, no NOTIFY ([`Source::open`]).
fn open() -> Arc<TransferConfig> {
    Arc::new(TransferConfig {
        zones: vec![Name::root()],
        to: vec![setup::To::Any],
        source: None,
        pos: crate::corefile::lexer::Pos {
            file: "".into(),
            line: 0,
            col: 0,
        },
    })
}

/// The `transfer` directive covering `zone` with its longest zone.
fn covering(transfers: &[TransferConfig], zone: &Name) -> Option<Arc<TransferConfig>> {
    transfers
        .iter()
        .filter_map(|t| {
            let longest = t.zones.iter().filter(|z| z.zone_of(zone)).map(|z| z.num_labels()).max();
            Some((longest?, t))
        })
        .max_by_key(|(n, _)| *n)
        .map(|(_, t)| Arc::new(t.clone()))
}

/// Whether `frame` (a whole DNS message from a TCP client) is a plain
/// query asking AXFR or IXFR, read from its header and question alone.
pub fn asks(frame: &[u8]) -> bool {
    let header_ok = frame.len() > 12 && frame[2] & 0xF8 == 0 && frame[4..6] == [0, 1];
    if !header_ok {
        return false;
    }
    let mut at = 12;
    while let Some(&len) = frame.get(at) {
        if len == 0 {
            // The type and class must be there (the class is not judged).
            let qtype = frame.get(at + 1..at + 5).map(|t| u16::from_be_bytes([t[0], t[1]]));
            return matches!(qtype, Some(251 | 252));
        }
        if len & 0xC0 != 0 {
            return false;
        }
        at += 1 + usize::from(len);
    }
    false
}

/// [`serve`] on a TCP connection: the replies written before the request
/// (`before`) go first. `None`: the connection closed meanwhile (`closed`
/// completed, or its writer is gone).
pub async fn on_connection(
    (frame, signer): (&[u8], Option<Signer>),
    peer: SocketAddr,
    tx: &mpsc::Sender<Vec<u8>>,
    before: Vec<u8>,
    find: impl FnOnce(&Name, RecordType) -> Found,
    closed: impl std::future::Future<Output = ()>,
) -> Option<bool> {
    if !before.is_empty() && tx.send(before).await.is_err() {
        return None;
    }
    tokio::select! {
        biased;
        () = closed => None,
        served = serve((frame, signer), peer, tx, find) => Some(served),
    }
}

/// The `transfer` of the block a name falls in, with the `coredns_dns_*`
/// series of its zone (the caller's router knows them).
pub type Found = Option<(Arc<Transfer>, Option<Arc<ZoneStats>>)>;

/// Answers the zone transfer request `frame` from `peer`, handing each
/// framed message to `tx`; false when no `transfer` serves it (the caller
/// answers it as any other query: REFUSED). `find` gives the `transfer`
/// of the block the zone falls in, when the block's guard lets the
/// request through. With `signer` (a request `tsig` verified, its TSIG
/// record taken off), every message sent is signed.
pub async fn serve(
    (frame, signer): (&[u8], Option<Signer>),
    peer: SocketAddr,
    tx: &mpsc::Sender<Vec<u8>>,
    find: impl FnOnce(&Name, RecordType) -> Found,
) -> bool {
    let started = Instant::now();
    let Ok(request) = Message::from_vec(frame) else {
        return false;
    };
    let Some(query) = request.queries.first() else {
        return false;
    };
    let Some((transfer, stats)) = find(query.name(), query.query_type()) else {
        return false;
    };
    // the zone itself, or one found under a zone at run time (`auto`'s,
    // a catalog's members), the one found of its own name too
    let member = |(i, x): (usize, &Xfr)| Some((i, Source::Plugin(x.source.member(query.name())?)));
    let found = match transfer.zones.iter().position(|x| x.source.name() == query.name()) {
        Some(i) => Some((i, member((i, &transfer.zones[i])).map(|(_, m)| m))),
        None => transfer
            .zones
            .iter()
            .enumerate()
            .find_map(member)
            .map(|(i, m)| (i, Some(m))),
    };
    let Some((i, member)) = found else {
        return false;
    };
    if !transfer.zones[i].cfg.allows(peer.ip()) {
        transfer.stats.request(i, Request::Refused);
        tracing::info!(target: "transfer", "refused transfer of zone {} to {}: not in `to`", query.name(), peer.ip());
        return false;
    }
    let sent = transfer
        .send((i, member.as_ref()), &request, peer, (tx, signer.map(Signer::stream)))
        .await;
    if let (Some(stats), Some(rcode)) = (stats, sent.rcode) {
        stats.record(&Served {
            transport: Transport::Tcp,
            ipv6: peer.is_ipv6(),
            qtype: crate::metrics::type_slot(query.query_type()),
            dnssec_ok: false,
            request_size: frame.len(),
            response_size: sent.bytes,
            rcode,
            plugin: Plugin::Transfer,
            truncated: false,
            expansion: None,
            nanos: started.elapsed().as_nanos() as u64,
        });
    }
    true
}

/// What a transfer sent: its bytes, and the rcode (`None`: the client
/// went away first).
struct Sent {
    bytes: usize,
    rcode: Option<ResponseCode>,
}

impl Transfer {
    /// Sends zone `i`, or `member`, the zone found under it (or, for an
    /// IXFR of the current serial, its SOA).
    async fn send(
        &self,
        (i, member): (usize, Option<&Source>),
        request: &Message,
        peer: SocketAddr,
        (tx, signer): (&mpsc::Sender<Vec<u8>>, Option<Stream>),
    ) -> Sent {
        let mut out = Outbox {
            request,
            tx,
            signer,
            bytes: 0,
            records: 0,
        };
        let source = member.unwrap_or(&self.zones[i].source);
        let Some(mut walk) = source.walk(self.cluster.as_ref()) else {
            let rcode = ResponseCode::ServFail;
            let ok = out.send(Vec::new(), rcode).await;
            return out.sent(ok.then_some(rcode));
        };
        let name = source.name();
        if ixfr_serial(request).is_some_and(|held| walk.current(held)) {
            self.stats.request(i, Request::Current);
            let ok = out.send(vec![walk.soa()], ResponseCode::NoError).await;
            return out.sent(ok.then_some(ResponseCode::NoError));
        }
        let (mut pending, mut size, mut batch) = (Vec::new(), 0, Vec::new());
        loop {
            let more = walk.next(&mut batch);
            for record in batch.drain(..) {
                let len = record.to_bytes().map_or(BUDGET, |b| b.len());
                if size + len > BUDGET && !pending.is_empty() {
                    if !out.send(std::mem::take(&mut pending), ResponseCode::NoError).await {
                        return out.sent(None);
                    }
                    size = 0;
                }
                size += len;
                pending.push(record);
            }
            if !more {
                break;
            }
        }
        if !out.send(pending, ResponseCode::NoError).await {
            return out.sent(None);
        }
        self.stats.request(i, Request::Transferred);
        tracing::info!(
            target: "transfer",
            "outgoing transfer of {} records of zone {} to {} for serial {}",
            out.records,
            name,
            peer.ip(),
            walk.serial()
        );
        out.sent(Some(ResponseCode::NoError))
    }
}

/// The messages of one transfer, on their way to the connection's writer.
struct Outbox<'a> {
    request: &'a Message,
    tx: &'a mpsc::Sender<Vec<u8>>,
    /// The request was signed: so is each message.
    signer: Option<Stream>,
    bytes: usize,
    records: usize,
}

impl Outbox<'_> {
    /// Sends one message holding `records`; false when it cannot (the
    /// connection is gone, or the message does not encode).
    async fn send(&mut self, records: Vec<Record>, rcode: ResponseCode) -> bool {
        let mut m = Message::new(self.request.metadata.id, MessageType::Response, OpCode::Query);
        m.metadata.authoritative = rcode == ResponseCode::NoError;
        m.metadata.response_code = rcode;
        m.queries = self.request.queries.clone();
        self.records += records.len();
        m.answers = records;
        let signed = m.to_vec().map(|mut b| {
            if let Some(signer) = &mut self.signer {
                signer.sign(&mut b);
            }
            b
        });
        let bytes = match signed {
            Ok(b) if u16::try_from(b.len()).is_ok() => b,
            Ok(b) => {
                tracing::error!(target: "transfer", "a transfer message of {} bytes does not fit a TCP frame; transfer ended", b.len());
                return false;
            }
            Err(e) => {
                tracing::error!(target: "transfer", "a transfer message does not encode: {e}; transfer ended");
                return false;
            }
        };
        let mut framed = Vec::with_capacity(bytes.len() + 2);
        framed.extend_from_slice(&u16::try_from(bytes.len()).unwrap_or(u16::MAX).to_be_bytes());
        framed.extend_from_slice(&bytes);
        self.bytes += bytes.len();
        self.tx.send(framed).await.is_ok()
    }

    fn sent(&self, rcode: Option<ResponseCode>) -> Sent {
        Sent {
            bytes: self.bytes,
            rcode,
        }
    }
}

/// The serial an IXFR request says the client holds (its authority SOA).
fn ixfr_serial(request: &Message) -> Option<u32> {
    if request.queries.first()?.query_type() != RecordType::IXFR {
        return None;
    }
    request.authorities.iter().find_map(|r| match &r.data {
        RData::SOA(soa) => Some(soa.serial),
        _ => None,
    })
}

#[cfg(test)]
mod tests;
