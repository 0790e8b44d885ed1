//! A signed zone as zone-file text (`db.<zone>.signed`): one record a line,
//! the DNSSEC records in their presentation form (RFC 4034: RRSIG times as
//! `YYYYMMDDHHmmSS`, keys and signatures in base64, digests in hex), which
//! the `file` plugin, BIND and ldns read back.

use std::fmt::Write as _;

use base64::Engine as _;
use hickory_proto::rr::{Name, RData, Record, RecordType};

/// The text of the zone `origin` holding `records`, signed at `now`.
pub fn zone_text(origin: &Name, records: &[Record], now: u32) -> String {
    let mut out = format!(
        "; {origin} signed by clusterdns's sign at {}\n$ORIGIN {origin}\n",
        time(now)
    );
    for r in records {
        let data = match &r.data {
            RData::Unknown { code, rdata } => dnssec(*code, &rdata.anything),
            RData::TXT(txt) => Some(txt.txt_data.iter().map(|s| quoted(s)).collect::<Vec<_>>().join(" ")),
            _ => None,
        };
        let _ = match data {
            Some(text) => writeln!(out, "{} {} {} {} {text}", r.name, r.ttl, r.dns_class, r.record_type()),
            None => writeln!(out, "{r}"),
        };
    }
    out
}

/// The presentation form of a DNSSEC record's RDATA.
fn dnssec(code: RecordType, d: &[u8]) -> Option<String> {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let u16_at = |at: usize| Some(u16::from_be_bytes([*d.get(at)?, *d.get(at + 1)?]));
    let u32_at = |at: usize| Some(u32::from_be_bytes(d.get(at..at + 4)?.try_into().ok()?));
    match code {
        RecordType::RRSIG => {
            let (signer, at) = name(d, 18)?;
            Some(format!(
                "{} {} {} {} {} {} {} {signer} {}",
                RecordType::from(u16_at(0)?),
                d.get(2)?,
                d.get(3)?,
                u32_at(4)?,
                time(u32_at(8)?),
                time(u32_at(12)?),
                u16_at(16)?,
                b64(d.get(at..)?)
            ))
        }
        RecordType::NSEC => {
            let (next, at) = name(d, 0)?;
            let mut text = next.to_string();
            let mut rest = d.get(at..)?;
            while let [window, len, tail @ ..] = rest {
                let bits = tail.get(..usize::from(*len))?;
                for (i, byte) in bits.iter().enumerate() {
                    for bit in (0..8).filter(|b| byte & (0x80 >> b) != 0) {
                        let code = u16::from(*window) << 8 | (i * 8 + bit) as u16;
                        let _ = write!(text, " {}", RecordType::from(code));
                    }
                }
                rest = &tail[usize::from(*len)..];
            }
            Some(text)
        }
        RecordType::DNSKEY | RecordType::CDNSKEY => Some(format!(
            "{} {} {} {}",
            u16_at(0)?,
            d.get(2)?,
            d.get(3)?,
            b64(d.get(4..)?)
        )),
        RecordType::DS | RecordType::CDS => {
            let hex: String = d.get(4..)?.iter().map(|b| format!("{b:02X}")).collect();
            Some(format!("{} {} {} {hex}", u16_at(0)?, d.get(2)?, d.get(3)?))
        }
        _ => None,
    }
}

/// A character string in quotes, `"` and `\\` escaped, other bytes
/// outside printable ASCII as `\\DDD`.
fn quoted(s: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in s {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(char::from(b));
            }
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\{b:03}");
            }
        }
    }
    out.push('"');
    out
}

/// The uncompressed name at `at` in `d`, and where it ends.
fn name(d: &[u8], mut at: usize) -> Option<(Name, usize)> {
    let mut labels = Vec::new();
    loop {
        let len = usize::from(*d.get(at)?);
        at += 1;
        if len == 0 {
            let mut n = Name::from_labels(labels).ok()?;
            n.set_fqdn(true);
            return Some((n, at));
        }
        labels.push(d.get(at..at + len)?.to_vec());
        at += len;
    }
}

/// Seconds since 1970 as `YYYYMMDDHHmmSS` (UTC), as RFC 4034 3.2 writes
/// an RRSIG's times (civil from days: H. Hinnant's algorithm).
fn time(secs: u32) -> String {
    let secs = i64::from(secs);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}{:02}{:02}{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_as_rfc_4034_writes_them() {
        assert_eq!(super::time(0), "19700101000000");
        assert_eq!(super::time(1_462_312_124), "20160503214844");
        assert_eq!(super::time(951_782_400), "20000229000000");
    }
}
