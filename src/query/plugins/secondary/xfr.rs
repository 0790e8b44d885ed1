//! A secondary's questions to its primary, over TCP as CoreDNS asks
//! them: the zone's SOA serial ([`serial`]) and the whole zone by AXFR
//! ([`axfr`], RFC 5936: messages read until the SOA comes again); what
//! changed since a serial comes by IXFR (`ixfr.rs`). Every wait is
//! bounded; a reply that is not what was asked is an error, never a
//! panic.

use std::net::SocketAddr;
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use rand::RngExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::zonefile::Zone;

/// How long connecting to a primary may take.
const DIAL: Duration = Duration::from_secs(5);
/// How long one message of a reply may take to come.
const READ: Duration = Duration::from_secs(10);

/// The serial of `origin`'s SOA as `primary` answers it now.
pub async fn serial(primary: SocketAddr, origin: &Name) -> Result<u32, String> {
    let (mut conn, id) = ask(primary, origin, RecordType::SOA, None).await?;
    let reply = read(&mut conn, id).await?;
    reply
        .answers
        .iter()
        .find_map(|r| match &r.data {
            RData::SOA(soa) if &r.name == origin => Some(soa.serial),
            _ => None,
        })
        .ok_or_else(|| format!("{primary} answered no SOA for {origin}"))
}

/// `origin` transferred from `primary` by AXFR, and how many records came.
pub async fn axfr(primary: SocketAddr, origin: &Name) -> Result<(Zone, usize), String> {
    let (mut conn, id) = ask(primary, origin, RecordType::AXFR, None).await?;
    let mut records: Vec<Record> = Vec::new();
    let mut soas = 0;
    while soas < 2 {
        let reply = read(&mut conn, id).await?;
        if reply.answers.is_empty() {
            return Err(format!("{primary} sent a message with no records"));
        }
        for r in reply.answers {
            if records.is_empty() && r.record_type() != RecordType::SOA {
                return Err(format!("{primary}'s transfer does not start with the SOA"));
            }
            soas += usize::from(r.record_type() == RecordType::SOA);
            records.push(r);
        }
    }
    let count = records.len();
    if records.len() > 1 && records.last().map(Record::record_type) == Some(RecordType::SOA) {
        records.pop(); // the closing SOA: the first one is the zone's
    }
    let zone = crate::zonefile::from_records(origin, records)?;
    Ok((zone, count))
}

/// A TCP connection to `primary` with the question sent (`authority`:
/// the SOA an IXFR names), and its ID.
pub(super) async fn ask(
    primary: SocketAddr,
    origin: &Name,
    qtype: RecordType,
    authority: Option<Record>,
) -> Result<(TcpStream, u16), String> {
    let id: u16 = rand::rng().random();
    let mut m = Message::new(id, MessageType::Query, OpCode::Query);
    m.add_query(Query::query(origin.clone(), qtype));
    m.authorities.extend(authority);
    let bytes = m.to_vec().map_err(|e| e.to_string())?;
    let mut conn = tokio::time::timeout(DIAL, TcpStream::connect(primary))
        .await
        .map_err(|_| format!("connecting to {primary} timed out"))?
        .map_err(|e| format!("connecting to {primary}: {e}"))?;
    let len = u16::try_from(bytes.len()).map_err(|_| "question too long".to_string())?;
    let mut framed = len.to_be_bytes().to_vec();
    framed.extend_from_slice(&bytes);
    conn.write_all(&framed)
        .await
        .map_err(|e| format!("writing to {primary}: {e}"))?;
    Ok((conn, id))
}

/// The next message on `conn`: the reply to `id`, with NOERROR.
pub(super) async fn read(conn: &mut TcpStream, id: u16) -> Result<Message, String> {
    let frame = tokio::time::timeout(READ, async {
        let len = conn.read_u16().await?;
        let mut frame = vec![0; usize::from(len)];
        conn.read_exact(&mut frame).await?;
        Ok::<_, std::io::Error>(frame)
    })
    .await
    .map_err(|_| "the primary sent nothing for 10s".to_string())?
    .map_err(|e| format!("reading from the primary: {e}"))?;
    let m = Message::from_vec(&frame).map_err(|e| format!("the primary's reply does not parse: {e}"))?;
    if m.metadata.id != id || m.metadata.message_type != MessageType::Response {
        return Err("the primary's reply is not to the question asked".into());
    }
    match m.metadata.response_code {
        ResponseCode::NoError => Ok(m),
        rcode => Err(format!("the primary answered {rcode}")),
    }
}
