//! Replies parsed as strictly as the strictest stub resolvers do.

use hickory_proto::op::Message;
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};

/// Parses a reply as strictly as the strictest stub resolvers do (glibc's
/// and musl's `ns_initparse`): the header's counts match the records, the
/// message ends where its last counted record ends (a truncated reply
/// holds whole records only), and no RRset holds the same record twice.
pub fn parse_strict(bytes: &[u8]) -> Result<Message, String> {
    let mut decoder = BinDecoder::new(bytes);
    let message = Message::read(&mut decoder).map_err(|e| format!("does not parse: {e}"))?;
    if !decoder.is_empty() {
        return Err(format!("{} bytes after the last counted record", decoder.len()));
    }
    let sections = [
        ("answer", &message.answers),
        ("authority", &message.authorities),
        ("additional", &message.additionals),
    ];
    for (section, records) in sections {
        for (i, r) in records.iter().enumerate() {
            let same = |o: &&hickory_proto::rr::Record| {
                o.name == r.name && o.record_type() == r.record_type() && o.dns_class == r.dns_class && o.data == r.data
            };
            if records[..i].iter().any(|o| same(&o)) {
                return Err(format!("{section} section holds {r} twice"));
            }
        }
    }
    Ok(message)
}
