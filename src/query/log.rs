//! The `log` directive: one line per answered query, in the block's
//! format (CoreDNS's `{common}` by default, or `{combined}`, or one of
//! placeholders: `logline.rs`), written to stdout after `[INFO] `, for the
//! classes of answers asked for:
//!
//! ```text
//! [INFO] {remote}:{port} - {>id} "{type} {class} {name} {proto} {size} {>do} {>bufsize}" {rcode} {>rflags} {rsize} {duration}
//! ```
//!
//! The answering thread only types the reply and copies what the line
//! needs into a bounded queue ([`QUEUE`] lines); one logger thread formats
//! and writes them in batches. When the queue is full the line is dropped
//! and counted (`clusterdns_log_dropped_total`): a slow terminal never
//! slows DNS.

pub mod print;
pub mod setup;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::OnceLock;
use std::time::Instant;

use hickory_proto::op::{Message, ResponseCode};

use super::logline::{self, Facts, Node, RespType};
use crate::metrics::Transport;
use crate::query::log::setup::LogStyle;
use crate::query::metadata::Carried;

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
    kind: RespType,
    /// The labels the query's handling set (`trace/traceid`).
    carried: Carried,
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
    type Parsed = (Vec<Node>, Option<std::sync::Arc<crate::query::metadata::Metadata>>);
    let mut formats: std::collections::HashMap<u32, Parsed> = std::collections::HashMap::new();
    let mut line = String::new();
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        while let Some(e) = next {
            if let Ok(request) = Message::from_vec(&e.request) {
                let (nodes, metadata) = formats.entry(e.style.format).or_insert_with(|| {
                    let (text, metadata) = crate::query::log::setup::formatted(e.style.format);
                    (logline::parse(&text), metadata)
                });
                let facts = Facts {
                    metadata: metadata.as_deref(),
                    peer: e.peer,
                    transport: e.t,
                    request: &request,
                    size: e.request.len(),
                    flags: [e.reply_head[2], e.reply_head[3]],
                    reply_len: e.reply_len,
                    rcode: e.rcode,
                    secs: e.secs,
                    kind: e.kind,
                    carried: &e.carried,
                };
                line.clear();
                line.push_str("[INFO] ");
                logline::render(nodes, &facts, &mut line);
                let _ = writeln!(out, "{line}");
            }
            next = rx.try_recv().ok();
        }
        let _ = out.flush();
    }
}

/// Queues the log line for `request` from `peer` over `t` answered with
/// `reply`, if `style` logs its class (`carried`: the labels its handling
/// set).
pub fn query(
    style: LogStyle,
    (peer, t): (SocketAddr, Transport),
    request: &[u8],
    reply: &[u8],
    rcode: ResponseCode,
    started: Instant,
    carried: Carried,
) {
    let kind = logline::typify(reply);
    let logged = match kind.class() {
        "success" => style.success,
        "denial" => style.denial,
        _ => style.error,
    };
    if !logged {
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
        kind,
        carried,
    };
    match queue() {
        Some(tx) if tx.try_send(entry).is_ok() => {}
        _ => {
            crate::metrics::LOG_DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::op::{MessageType, OpCode, Query};
    use hickory_proto::rr::{Name, RecordType};

    fn line(format: &str, kind: RespType) -> String {
        let mut m = Message::new(4242, MessageType::Query, OpCode::Query);
        m.add_query(Query::query(
            Name::from_ascii("Web.shop.svc.cluster.local.").expect("name"),
            RecordType::A,
        ));
        let facts = Facts {
            peer: "127.0.0.1:5353".parse().expect("addr"),
            transport: Transport::Udp,
            request: &m,
            size: 44,
            flags: [0x85, 0x00],
            reply_len: 4,
            rcode: ResponseCode::NoError,
            secs: 0.000123,
            kind,
            metadata: None,
            carried: &Default::default(),
        };
        let mut out = String::new();
        logline::render(&logline::parse(format), &facts, &mut out);
        out
    }

    #[test]
    fn common_and_custom_formats() {
        let common = crate::query::log::setup::COMMON;
        assert_eq!(
            line(common, RespType::NoError),
            "127.0.0.1:5353 - 4242 \"A IN web.shop.svc.cluster.local. udp 44 false 512\" NOERROR qr,aa,rd 4 0.000123s"
        );
        assert_eq!(
            line(&crate::query::log::setup::combined(), RespType::NoError),
            format!("{} \"0\"", line(common, RespType::NoError))
        );
        assert_eq!(
            line(
                "{/log/class} {/log/type} {type} {/forward/upstream} {when}",
                RespType::NoData
            ),
            "denial NODATA A - {when}"
        );
    }
}
