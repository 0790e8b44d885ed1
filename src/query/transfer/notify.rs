//! NOTIFY (RFC 1996) to the secondaries of a block's transferred zones
//! when a zone's serial changes (the store's snapshot, a zone file
//! reloaded): tasks of a block's `transfer`, ending when the block does (a
//! reload builds a new one).
//!
//! Every (zone, `to` address but `*`) pair has its own task, so a dead
//! peer delays no other: each reads the serial every [`POLL`] (an
//! atomic load) and on a change sends NOTIFY, at most once per [`GAP`], so
//! a burst of changes is one NOTIFY of its last serial. Each NOTIFY is
//! tried [`TRIES`] times, waiting [`WAIT`] for the answer; a failure is
//! counted, and logged once per reason. A dead peer's own next round
//! waits for its last (at most `TRIES × WAIT`); the others' do not (a
//! single task for all once held every peer up that long).

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Weak};
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RecordType};
use tokio::net::UdpSocket;

use super::block::Transfer;

/// How often the serial is read.
const POLL: Duration = Duration::from_millis(100);
/// At least this long between two rounds of NOTIFY.
const GAP: Duration = Duration::from_secs(1);
/// Tries per NOTIFY, and how long each waits for the answer.
const TRIES: usize = 3;
const WAIT: Duration = Duration::from_secs(1);

/// Starts the NOTIFY tasks of `transfer`: one per zone and address to
/// notify.
pub fn spawn(transfer: &Arc<Transfer>) {
    for (zone, x) in transfer.zones.iter().enumerate() {
        for to in x.cfg.notify() {
            tokio::spawn(run(Arc::downgrade(transfer), zone, to));
        }
    }
}

/// Notifies `to` of zone number `zone`'s changes while the block lives.
async fn run(transfer: Weak<Transfer>, zone: usize, to: SocketAddr) {
    let mut notified: Option<u32> = None;
    let mut logged: HashSet<String> = HashSet::new();
    loop {
        tokio::time::sleep(POLL).await;
        let Some(t) = transfer.upgrade() else {
            return; // the block is gone (reload, shutdown)
        };
        let Some(x) = t.zones.get(zone) else { return };
        let Some(serial) = x.source.serial(t.cluster.as_ref()) else {
            continue;
        };
        if notified == Some(serial) {
            continue;
        }
        notified = Some(serial);
        let (name, source) = (x.source.name().clone(), x.cfg.source);
        drop(t); // a reload does not wait for a slow peer
        let result = notify(&name, to, source).await;
        let Some(t) = transfer.upgrade() else { return };
        t.stats.notify(zone, result.is_ok());
        drop(t);
        report(&mut logged, &name, to, serial, result);
        tokio::time::sleep(GAP).await;
    }
}

/// Logs a failure the first time it happens for `to` (later ones only
/// at debug), and a success after failures.
fn report(logged: &mut HashSet<String>, zone: &Name, to: SocketAddr, serial: u32, result: Result<(), String>) {
    match result {
        Ok(()) => {
            if !logged.is_empty() {
                logged.clear();
                tracing::info!(target: "transfer", "NOTIFY for zone {zone} (serial {serial}) accepted by {to} again");
            }
            tracing::debug!(target: "transfer", "NOTIFY for zone {zone} (serial {serial}) accepted by {to}");
        }
        Err(why) => {
            if logged.insert(why.clone()) {
                tracing::warn!(
                    target: "transfer",
                    "NOTIFY for zone {zone} (serial {serial}) not accepted by {to}: {why} (after {TRIES} tries; logged once, counted in clusterdns_transfer_notifies_total)"
                );
            } else {
                tracing::debug!(target: "transfer", "NOTIFY for zone {zone} not accepted by {to}: {why}");
            }
        }
    }
}

/// Sends NOTIFY for `zone` to `to` (from `source`) until it is answered
/// NOERROR, at most [`TRIES`] times; the last reason otherwise.
async fn notify(zone: &Name, to: SocketAddr, source: Option<IpAddr>) -> Result<(), String> {
    let local = source.unwrap_or(match to {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    });
    let socket = UdpSocket::bind((local, 0))
        .await
        .map_err(|e| format!("cannot bind {local}: {e}"))?;
    let id = fastrand::u16(..);
    let mut m = Message::new(id, MessageType::Query, OpCode::Notify);
    m.metadata.authoritative = true;
    m.add_query(Query::query(zone.clone(), RecordType::SOA));
    let bytes = m.to_vec().map_err(|e| format!("does not encode: {e}"))?;
    let mut why = String::new();
    for _ in 0..TRIES {
        if let Err(e) = socket.send_to(&bytes, to).await {
            why = format!("send: {e}");
            tokio::time::sleep(WAIT).await;
            continue;
        }
        match tokio::time::timeout(WAIT, answer(&socket, id, to)).await {
            Ok(ResponseCode::NoError) => return Ok(()),
            Ok(rcode) => why = format!("answered {}", crate::metrics::rcode_name(rcode)),
            Err(_) => why = "no answer".to_string(),
        }
    }
    Err(why)
}

/// The rcode of the first answer from `to` with `id`.
async fn answer(socket: &UdpSocket, id: u16, to: SocketAddr) -> ResponseCode {
    let mut buf = [0u8; 1232];
    loop {
        let Ok((n, from)) = socket.recv_from(&mut buf).await else {
            return ResponseCode::ServFail;
        };
        let Ok(reply) = Message::from_vec(&buf[..n]) else {
            continue;
        };
        if from == to && reply.metadata.id == id && reply.metadata.message_type == MessageType::Response {
            return reply.metadata.response_code;
        }
    }
}
