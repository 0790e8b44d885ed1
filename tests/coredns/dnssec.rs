//! DNSSEC records as zone-file text, both ways, without hickory's DNSSEC
//! feature (replies carry them as unknown data). RRSIG: `TYPE ALG LABELS
//! ORIG-TTL EXPIRATION INCEPTION KEYTAG SIGNER SIGNATURE...`, the two times
//! as `YYYYMMDDHHmmSS` (UTC) and the signature as base64, perhaps split by
//! spaces, unpadded or cut short, as CoreDNS's tests write it; printed back
//! with the times as seconds since 1970 and without the signature, which
//! CoreDNS's tests cut short and never compare, so an expected and a
//! received RRSIG compare as text on every other field. NSEC: `NEXT
//! TYPE...` (the type bitmap of RFC 4034 4.1.2). DS: `KEYTAG ALG
//! DIGEST-TYPE HEX`.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
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
    data.get(at..)?;
    Some(format!(
        "{covered} {alg} {labels} {} {} {} {keytag} {signer}",
        be32(4)?,
        be32(8)?,
        be32(12)?
    ))
}

/// A name in wire form at the start of `data`, uncompressed, and the rest.
fn split_name(data: &[u8]) -> Option<(Name, &[u8])> {
    let (mut labels, mut at) = (Vec::new(), 0);
    loop {
        let len = usize::from(*data.get(at)?);
        at += 1;
        if len == 0 {
            return Some((Name::from_labels(labels).ok()?, &data[at..]));
        }
        labels.push(data.get(at..at + len)?.to_vec());
        at += len;
    }
}

/// The RDATA of an NSEC from `NEXT TYPE...`.
pub fn nsec(r: &[String]) -> Result<RData, String> {
    let (next, types) = r.split_first().ok_or("NSEC needs NEXT TYPE...")?;
    let next = escaped(next).ok_or_else(|| format!("bad NSEC next name '{next}'"))?;
    let mut out = Vec::new();
    for label in next.iter() {
        out.push(u8::try_from(label.len()).map_err(|_| "bad next name")?);
        out.extend(label.to_ascii_lowercase());
    }
    out.push(0);
    let mut windows = std::collections::BTreeMap::<u8, [u8; 32]>::new();
    for t in types {
        let code = type_code(t).ok_or_else(|| format!("bad type '{t}'"))?;
        let [window, low] = code.to_be_bytes();
        windows.entry(window).or_insert([0; 32])[usize::from(low / 8)] |= 0x80 >> (low % 8);
    }
    for (window, bits) in windows {
        let len = bits.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
        out.extend([window, len as u8]);
        out.extend(&bits[..len]);
    }
    Ok(RData::Unknown {
        code: RecordType::NSEC,
        rdata: NULL::with(out),
    })
}

/// The text of an NSEC's RDATA: the next name and the types, in order.
pub fn show_nsec(data: &[u8]) -> Option<String> {
    let (next, mut rest) = split_name(data)?;
    let mut text = next.to_string();
    while let [window, len, tail @ ..] = rest {
        let bits = tail.get(..usize::from(*len))?;
        for (i, byte) in bits.iter().enumerate() {
            for bit in 0..8 {
                if byte & (0x80 >> bit) != 0 {
                    let code = u16::from(*window) << 8 | (i * 8 + bit) as u16;
                    text.push_str(&format!(" {}", type_name(code)));
                }
            }
        }
        rest = &tail[usize::from(*len)..];
    }
    Some(text)
}

/// The RDATA of a DS from `KEYTAG ALG DIGEST-TYPE HEX...`.
pub fn ds(r: &[String]) -> Result<RData, String> {
    let num = |i: usize| {
        r.get(i)
            .and_then(|t| t.parse::<u16>().ok())
            .ok_or("DS needs KEYTAG ALG TYPE DIGEST")
    };
    let mut out = num(0)?.to_be_bytes().to_vec();
    out.push(u8::try_from(num(1)?).map_err(|_| "bad algorithm")?);
    out.push(u8::try_from(num(2)?).map_err(|_| "bad digest type")?);
    let hex = r.get(3..).ok_or("DS needs a digest")?.concat();
    for i in (0..hex.len()).step_by(2) {
        let byte = hex.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok());
        out.push(byte.ok_or_else(|| format!("bad DS digest '{hex}'"))?);
    }
    Ok(RData::Unknown {
        code: RecordType::DS,
        rdata: NULL::with(out),
    })
}

/// The text of a DS's RDATA, the digest in upper-case hex.
pub fn show_ds(data: &[u8]) -> Option<String> {
    let tag = u16::from_be_bytes(data.get(0..2)?.try_into().ok()?);
    let hex: String = data.get(4..)?.iter().map(|b| format!("{b:02X}")).collect();
    Some(format!("{tag} {} {} {hex}", data.get(2)?, data.get(3)?))
}

/// The RDATA of a DNSKEY from `FLAGS PROTOCOL ALG KEY...` (the key as
/// base64, perhaps split by spaces).
pub fn dnskey(r: &[String]) -> Result<RData, String> {
    let num = |i: usize| {
        r.get(i)
            .and_then(|t| t.parse::<u16>().ok())
            .ok_or("DNSKEY needs FLAGS PROTOCOL ALG KEY")
    };
    let mut out = num(0)?.to_be_bytes().to_vec();
    out.push(u8::try_from(num(1)?).map_err(|_| "bad protocol")?);
    out.push(u8::try_from(num(2)?).map_err(|_| "bad algorithm")?);
    let key = r.get(3..).ok_or("DNSKEY needs a key")?.concat();
    out.extend(
        LENIENT
            .decode(&key)
            .map_err(|e| format!("bad DNSKEY key '{key}': {e}"))?,
    );
    Ok(RData::Unknown {
        code: RecordType::DNSKEY,
        rdata: NULL::with(out),
    })
}

/// The text of a DNSKEY's RDATA, the key as one word of base64.
pub fn show_dnskey(data: &[u8]) -> Option<String> {
    let flags = u16::from_be_bytes(data.get(0..2)?.try_into().ok()?);
    let key = base64::engine::general_purpose::STANDARD.encode(data.get(4..)?);
    Some(format!("{flags} {} {} {key}", data.get(2)?, data.get(3)?))
}

/// A name written with `\DDD` and `\X` escapes (an NSEC black lie's
/// `\000.NAME`, which `Name::from_ascii` refuses).
fn escaped(text: &str) -> Option<Name> {
    let (mut labels, mut label) = (Vec::new(), Vec::new());
    let mut chars = text.bytes().peekable();
    while let Some(c) = chars.next() {
        match c {
            b'\\' => {
                let first = chars.next()?;
                if first.is_ascii_digit() {
                    let digits = [first, chars.next()?, chars.next()?];
                    label.push(std::str::from_utf8(&digits).ok()?.parse::<u8>().ok()?);
                } else {
                    label.push(first);
                }
            }
            b'.' => labels.push(std::mem::take(&mut label)),
            c => label.push(c),
        }
    }
    if !label.is_empty() {
        labels.push(label);
    }
    let mut name = Name::from_labels(labels).ok()?;
    name.set_fqdn(true);
    Some(name)
}

/// Types CoreDNS's NSEC bitmaps list that hickory has no name for.
const UNNAMED: [(&str, u16); 3] = [("LOC", 29), ("HIP", 55), ("SPF", 99)];

/// A type's code from its name, as miekg/dns names them.
fn type_code(t: &str) -> Option<u16> {
    let t = t.to_ascii_uppercase();
    UNNAMED
        .iter()
        .find(|(name, _)| *name == t)
        .map(|(_, code)| *code)
        .or_else(|| t.parse::<RecordType>().ok().map(u16::from))
}

/// A type's name from its code, as miekg/dns names them.
fn type_name(code: u16) -> String {
    UNNAMED
        .iter()
        .find(|(_, c)| *c == code)
        .map_or_else(|| RecordType::from(code).to_string(), |(name, _)| name.to_string())
}
