//! RRSIG records as zone-file text, both ways, without hickory's DNSSEC
//! feature (replies carry them as unknown data): `RRSIG TYPE ALG LABELS
//! ORIG-TTL EXPIRATION INCEPTION KEYTAG SIGNER SIGNATURE...`, the two times
//! as `YYYYMMDDHHmmSS` (UTC) and the signature as base64, perhaps split by
//! spaces, unpadded or cut short, as CoreDNS's tests write it. Printed back with the
//! times as seconds since 1970, so an expected and a received RRSIG
//! compare as text.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use hickory_proto::rr::rdata::NULL;
use hickory_proto::rr::{Name, RData, RecordType};

/// Base64 as miekg/dns reads it: padding optional, trailing bits ignored.
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Seconds since 1970 of a `YYYYMMDDHHmmSS` UTC time (RFC 4034 3.2).
fn epoch(t: &str) -> Result<u32, String> {
    let bad = || format!("bad RRSIG time '{t}'");
    if t.len() != 14 || !t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map_err(|_| bad());
    }
    let n = |a: usize, b: usize| t[a..b].parse::<i64>().map_err(|_| bad());
    let (y, m, d) = (n(0, 4)?, n(4, 6)?, n(6, 8)?);
    // Days from civil (proleptic Gregorian), H. Hinnant's algorithm.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + n(8, 10)? * 3600 + n(10, 12)? * 60 + n(12, 14)?;
    u32::try_from(secs).map_err(|_| bad())
}

/// The RDATA of an RRSIG from its text fields.
pub fn parse(r: &[String]) -> Result<RData, String> {
    if r.len() < 9 {
        return Err("RRSIG needs TYPE ALG LABELS TTL EXPIRATION INCEPTION KEYTAG SIGNER SIGNATURE".into());
    }
    let num = |i: usize| r[i].parse::<u32>().map_err(|_| format!("bad RRSIG field '{}'", r[i]));
    let covered: RecordType = r[0]
        .to_ascii_uppercase()
        .parse()
        .map_err(|_| format!("bad type '{}'", r[0]))?;
    let mut out = u16::from(covered).to_be_bytes().to_vec();
    out.push(u8::try_from(num(1)?).map_err(|_| "bad algorithm")?);
    out.push(u8::try_from(num(2)?).map_err(|_| "bad labels")?);
    out.extend(num(3)?.to_be_bytes());
    out.extend(epoch(&r[4])?.to_be_bytes());
    out.extend(epoch(&r[5])?.to_be_bytes());
    out.extend(u16::try_from(num(6)?).map_err(|_| "bad key tag")?.to_be_bytes());
    let signer = Name::from_ascii(&r[7]).map_err(|e| format!("bad signer '{}': {e}", r[7]))?;
    for label in signer.iter() {
        out.push(u8::try_from(label.len()).map_err(|_| "bad signer")?);
        out.extend(label.to_ascii_lowercase());
    }
    out.push(0);
    // Padding anywhere and a dangling last character (CoreDNS's tests cut
    // signatures short) are dropped: the signature is opaque to the tests.
    let mut text: String = r[8..].concat().chars().filter(|c| *c != '=').collect();
    if text.len() % 4 == 1 {
        text.pop();
    }
    let sig = LENIENT.decode(text).map_err(|e| format!("bad RRSIG signature: {e}"))?;
    out.extend(sig);
    Ok(RData::Unknown {
        code: RecordType::RRSIG,
        rdata: NULL::with(out),
    })
}

/// The text of an RRSIG's RDATA; `None` when it does not decode.
pub fn show(data: &[u8]) -> Option<String> {
    let be32 = |at: usize| Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?));
    let covered = RecordType::from(u16::from_be_bytes(data.get(0..2)?.try_into().ok()?));
    let (alg, labels) = (*data.get(2)?, *data.get(3)?);
    let keytag = u16::from_be_bytes(data.get(16..18)?.try_into().ok()?);
    let mut at = 18;
    let mut signer = Vec::new();
    loop {
        let len = usize::from(*data.get(at)?);
        at += 1;
        if len == 0 {
            break;
        }
        signer.push(data.get(at..at + len)?.to_vec());
        at += len;
    }
    let signer = Name::from_labels(signer).ok()?;
    let sig = STANDARD.encode(data.get(at..)?);
    Some(format!(
        "{covered} {alg} {labels} {} {} {} {keytag} {signer} {sig}",
        be32(4)?,
        be32(8)?,
        be32(12)?
    ))
}
