//! Zones as the zone tests (file, auto, secondary, transfer) read them
//! from a server: one A answer, a wait for an answer to change, and a
//! whole AXFR.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use hickory_proto::op::Message;
use hickory_proto::rr::{Record, RecordType};

/// How long [`until`] waits for an answer before it gives the last one.
pub const LIMIT: Duration = Duration::from_secs(45);

/// What `dns` answers for `name` A over UDP: the rcode and the first
/// answer's data (`("no reply", "")` when nothing comes back).
pub fn ask(dns: SocketAddr, name: &str) -> (String, String) {
    let q = super::query(7, name, RecordType::A, None);
    let reply = super::udp_raw(dns, &q).and_then(|b| Message::from_vec(&b).ok());
    let Some(m) = reply else {
        return ("no reply".into(), String::new());
    };
    let first = m.answers.first().map(|r| r.data.to_string()).unwrap_or_default();
    (super::rcode_name(&m), first)
}

/// Asks `name` until the answer is `want` (rcode, first answer) or
/// [`LIMIT`] passes; the last answer.
pub fn until(dns: SocketAddr, name: &str, want: (&str, &str)) -> (String, String) {
    let started = Instant::now();
    loop {
        let got = ask(dns, name);
        if (got.0.as_str(), got.1.as_str()) == want || started.elapsed() > LIMIT {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The records of an AXFR of `zone` from `server`: one TCP connection,
/// at most 100 messages, each read within 10 s.
pub fn axfr(server: SocketAddr, zone: &str) -> Vec<Record> {
    let mut s = TcpStream::connect(server).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let q = super::query(9, zone, RecordType::AXFR, None);
    s.write_all(&super::framed(&q)).expect("send");
    let mut records: Vec<Record> = Vec::new();
    for _ in 0..100 {
        let m = Message::from_vec(&super::read_frame(&mut s).expect("a transfer message")).expect("decodable");
        records.extend(m.answers);
        if records.len() > 1 && records.last().map(Record::record_type) == Some(RecordType::SOA) {
            return records;
        }
    }
    panic!("the transfer never ends: {records:?}");
}
