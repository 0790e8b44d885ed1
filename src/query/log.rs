//! The `log` directive: one line per answered query, in CoreDNS's
//! `{common}` or `{combined}` format (common plus `"{>opcode}"`), written
//! to stdout, for the classes of answers asked for:
//!
//! ```text
//! [INFO] {remote}:{port} - {id} "{type} {class} {name} {proto} {size} {do} {bufsize}" {rcode} {rflags} {rsize} {duration}
//! ```
//!
//! The answering thread only copies what the line needs into a bounded
//! queue ([`QUEUE`] lines); one logger thread formats and writes them in
//! batches. When the queue is full the line is dropped and counted
//! (`clusterdns_log_dropped_total`): a slow terminal never slows DNS.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::OnceLock;
use std::time::Instant;

use hickory_proto::op::{Message, ResponseCode};

use crate::config::local::LogStyle;
use crate::metrics::{rcode_name, Transport};

/// Lines waiting for the logger thread, at most.
pub const QUEUE: usize = 65_536;

/// Log lines dropped because the queue was full.
pub fn dropped() -> u64 {
    crate::metrics::LOG_DROPPED.load(Ordering::Relaxed)
}

/// What one line needs, copied off the answering thread.
struct Entry {
    style: LogStyle,
    peer: SocketAddr,
    t: Transport,
    request: Vec<u8>,
    /// The reply's header (flags) and its length.
    reply_head: [u8; 4],
    reply_len: usize,
    rcode: ResponseCode,
    secs: f64,
}

fn queue() -> Option<&'static SyncSender<Entry>> {
    static QUEUE_TX: OnceLock<Option<SyncSender<Entry>>> = OnceLock::new();
    QUEUE_TX
        .get_or_init(|| {
            let (tx, rx) = sync_channel::<Entry>(QUEUE);
            std::thread::Builder::new()
                .name("query-log".into())
                .spawn(move || write_lines(&rx))
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// The logger thread: formats and writes lines, flushing when idle.
fn write_lines(rx: &Receiver<Entry>) {
    let mut out = std::io::BufWriter::with_capacity(64 << 10, std::io::stdout());
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        while let Some(e) = next {
            let mut reply = e.reply_head.to_vec();
            reply.resize(e.reply_len.max(4), 0);
            if let Ok(req) = Message::from_vec(&e.request) {
                let mut line = format_line(e.peer, e.t, &req, e.request.len(), &reply, e.rcode, e.secs);
                if e.style.combined {
                    line.push_str(&format!(" \"{}\"", op_name(req.metadata.op_code)));
                }
                let _ = writeln!(out, "{line}");
            }
            next = rx.try_recv().ok();
        }
        let _ = out.flush();
    }
}

/// Queues the log line for `request` answered with `reply`, if `style`
/// logs its class.
pub fn query(
    style: LogStyle,
    peer: SocketAddr,
    t: Transport,
    request: &[u8],
    reply: &[u8],
    rcode: ResponseCode,
    started: Instant,
) {
    let answers = reply.get(6..8).map_or(0, |c| u16::from_be_bytes([c[0], c[1]]));
    if !style.logs(rcode, answers) {
        return;
    }
    let mut reply_head = [0u8; 4];
    if let Some(h) = reply.get(..4) {
        reply_head.copy_from_slice(h);
    }
    let entry = Entry {
        style,
        peer,
        t,
        request: request.to_vec(),
        reply_head,
        reply_len: reply.len(),
        rcode,
        secs: started.elapsed().as_secs_f64(),
    };
    match queue() {
        Some(tx) if tx.try_send(entry).is_ok() => {}
        _ => {
            crate::metrics::LOG_DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn op_name(op: hickory_proto::op::OpCode) -> &'static str {
    use hickory_proto::op::OpCode;
    match op {
        OpCode::Query => "QUERY",
        OpCode::Status => "STATUS",
        OpCode::Notify => "NOTIFY",
        OpCode::Update => "UPDATE",
        _ => "OTHER",
    }
}

fn format_line(
    peer: SocketAddr,
    t: Transport,
    req: &Message,
    size: usize,
    reply: &[u8],
    rcode: ResponseCode,
    secs: f64,
) -> String {
    let (qtype, class, name) = req.queries.first().map_or(("-".into(), "-".into(), "-".into()), |q| {
        (
            q.query_type().to_string(),
            q.query_class().to_string(),
            q.name().to_string(),
        )
    });
    let (dnssec_ok, bufsize) = req
        .edns
        .as_ref()
        .map_or((false, 512), |e| (e.flags().dnssec_ok, e.max_payload()));
    let flags = reply.get(2..4).map_or(String::new(), |f| {
        let names = [
            (f[0] & 0x80, "qr"),
            (f[0] & 0x04, "aa"),
            (f[0] & 0x02, "tc"),
            (f[0] & 0x01, "rd"),
            (f[1] & 0x80, "ra"),
        ];
        names
            .iter()
            .filter(|(bit, _)| *bit != 0)
            .map(|(_, n)| *n)
            .collect::<Vec<_>>()
            .join(",")
    });
    let (ip, port) = (peer.ip(), peer.port());
    let host = if ip.is_ipv6() {
        format!("[{ip}]")
    } else {
        ip.to_string()
    };
    format!(
        "[INFO] {host}:{port} - {} \"{qtype} {class} {name} {} {size} {dnssec_ok} {bufsize}\" {} {flags} {} {secs:.9}s",
        req.metadata.id,
        t.label(),
        rcode_name(rcode),
        reply.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::op::{MessageType, OpCode, Query};
    use hickory_proto::rr::{Name, RecordType};

    #[test]
    fn common_format() {
        let mut m = Message::new(4242, MessageType::Query, OpCode::Query);
        m.add_query(Query::query(
            Name::from_ascii("web.shop.svc.cluster.local.").expect("name"),
            RecordType::A,
        ));
        let reply = [0x10, 0x92, 0x85, 0x00];
        let peer: SocketAddr = "127.0.0.1:5353".parse().expect("addr");
        let line = format_line(peer, Transport::Udp, &m, 44, &reply, ResponseCode::NoError, 0.000123);
        assert_eq!(line, "[INFO] 127.0.0.1:5353 - 4242 \"A IN web.shop.svc.cluster.local. udp 44 false 512\" NOERROR qr,aa,rd 4 0.000123000s");
    }
}
