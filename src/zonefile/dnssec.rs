//! The DNSSEC records of a signed zone file (RRSIG, NSEC, DNSKEY, DS and
//! their CDS, CDNSKEY and KEY kin), which hickory-proto's zone parser
//! refuses: [`super::text::rewrite`] hands each to the parser as a TXT
//! record whose words are [`MARK`], the type and the record's data words,
//! so that the parser still resolves its owner, TTL and class as for any
//! record; [`record`] then makes it the record it stands for, its data in
//! wire form (RFC 4034 sections 2 to 5), carried as unknown data as replies
//! carry it. A relative name in its data (a signer, a next owner) is taken
//! below the zone's origin.

use base64::Engine as _;
use hickory_proto::rr::rdata::NULL;
use hickory_proto::rr::{Name, RData, Record, RecordType};

/// The first word of a TXT record that stands for a DNSSEC record.
pub(super) const MARK: &str = "clusterdns:dnssec";

/// The types read here.
pub(super) const TYPES: [&str; 7] = ["RRSIG", "NSEC", "DNSKEY", "DS", "CDS", "CDNSKEY", "KEY"];

/// The record `r` stands for when it is one of [`MARK`]'s TXT records
/// (`None` otherwise), or why its data does not read.
pub(super) fn record(r: &Record, origin: &Name) -> Option<Result<Record, String>> {
    let RData::TXT(txt) = &r.data else { return None };
    let mut words = txt.txt_data.iter().map(|w| String::from_utf8_lossy(w).into_owned());
    if words.next()? != MARK {
        return None;
    }
    let kind = words.next().unwrap_or_default();
    let words: Vec<String> = words.collect();
    let code: RecordType = kind.parse().ok()?;
    let wire = match code {
        RecordType::RRSIG => rrsig(&words, origin),
        RecordType::NSEC => nsec(&words, origin),
        RecordType::DS | RecordType::CDS => ds(&words),
        _ => dnskey(&words),
    };
    Some(wire.map_err(|e| format!("{} {kind}: {e}", r.name)).map(|wire| {
        let mut out = unknown(r.name.clone(), r.ttl, code, wire);
        out.dns_class = r.dns_class;
        out
    }))
}

/// A DNSSEC record of type `code` whose RDATA is `wire`, carried as
/// unknown data as replies carry it.
pub fn unknown(owner: Name, ttl: u32, code: RecordType, wire: Vec<u8>) -> Record {
    let data = RData::Unknown {
        code,
        rdata: NULL::with(wire),
    };
    Record::from_rdata(owner, ttl, data)
}

/// The type an RRSIG record covers.
pub fn covered(r: &Record) -> Option<RecordType> {
    match &r.data {
        RData::Unknown { code, rdata } if *code == RecordType::RRSIG => {
            let head = rdata.anything.get(..2)?;
            Some(RecordType::from(u16::from_be_bytes([head[0], head[1]])))
        }
        _ => None,
    }
}

/// `TYPE ALG LABELS ORIG-TTL EXPIRATION INCEPTION KEYTAG SIGNER SIGNATURE...`.
fn rrsig(w: &[String], origin: &Name) -> Result<Vec<u8>, String> {
    if w.len() < 9 {
        return Err("needs TYPE ALGORITHM LABELS TTL EXPIRATION INCEPTION KEYTAG SIGNER SIGNATURE".into());
    }
    let covered: RecordType = w[0].to_ascii_uppercase().parse().map_err(|_| bad("type", &w[0]))?;
    let mut out = u16::from(covered).to_be_bytes().to_vec();
    out.push(number(&w[1], "algorithm")?);
    out.push(number(&w[2], "labels")?);
    out.extend(number::<u32>(&w[3], "original TTL")?.to_be_bytes());
    out.extend(time(&w[4])?.to_be_bytes());
    out.extend(time(&w[5])?.to_be_bytes());
    out.extend(number::<u16>(&w[6], "key tag")?.to_be_bytes());
    wire_name(&mut out, &w[7], origin)?;
    out.extend(base64(&w[8..])?);
    Ok(out)
}

/// `NEXT TYPE...`: the next owner and the type bitmap (RFC 4034 4.1.2).
fn nsec(w: &[String], origin: &Name) -> Result<Vec<u8>, String> {
    let (next, types) = w.split_first().ok_or("needs a next owner name")?;
    let mut out = Vec::new();
    wire_name(&mut out, next, origin)?;
    let mut codes = types
        .iter()
        .map(|t| {
            t.to_ascii_uppercase()
                .parse::<RecordType>()
                .map(u16::from)
                .map_err(|_| bad("type", t))
        })
        .collect::<Result<Vec<u16>, String>>()?;
    type_bitmap(&mut codes, &mut out);
    Ok(out)
}

/// The type bitmap of an NSEC record (RFC 4034 4.1.2) for `codes`
/// (sorted and deduplicated here), appended to `out`.
pub fn type_bitmap(codes: &mut Vec<u16>, out: &mut Vec<u8>) {
    codes.sort_unstable();
    codes.dedup();
    for window in 0..=255u8 {
        let mut bits = [0u8; 32];
        let mut len = 0;
        for code in codes.iter().filter(|c| (*c >> 8) as u8 == window) {
            let low = usize::from(*code as u8);
            bits[low / 8] |= 0x80 >> (low % 8);
            len = low / 8 + 1;
        }
        if len > 0 {
            out.extend([window, len as u8]);
            out.extend(&bits[..len]);
        }
    }
}

/// `FLAGS PROTOCOL ALGORITHM KEY...` (DNSKEY, CDNSKEY, KEY): the RDATA.
pub fn dnskey(w: &[String]) -> Result<Vec<u8>, String> {
    if w.len() < 4 {
        return Err("needs FLAGS PROTOCOL ALGORITHM KEY".into());
    }
    let mut out = number::<u16>(&w[0], "flags")?.to_be_bytes().to_vec();
    out.push(number(&w[1], "protocol")?);
    out.push(number(&w[2], "algorithm")?);
    out.extend(base64(&w[3..])?);
    Ok(out)
}

/// `KEYTAG ALGORITHM DIGEST-TYPE DIGEST...` (DS, CDS).
fn ds(w: &[String]) -> Result<Vec<u8>, String> {
    if w.len() < 4 {
        return Err("needs KEYTAG ALGORITHM DIGEST-TYPE DIGEST".into());
    }
    let mut out = number::<u16>(&w[0], "key tag")?.to_be_bytes().to_vec();
    out.push(number(&w[1], "algorithm")?);
    out.push(number(&w[2], "digest type")?);
    let hex: String = w[3..].concat();
    if !hex.len().is_multiple_of(2) {
        return Err(bad("digest", &hex));
    }
    for pair in hex.as_bytes().chunks(2) {
        let digits = std::str::from_utf8(pair).map_err(|_| bad("digest", &hex))?;
        out.push(u8::from_str_radix(digits, 16).map_err(|_| bad("digest", &hex))?);
    }
    Ok(out)
}

fn bad(what: &str, word: &str) -> String {
    format!("bad {what} '{word}'")
}

fn number<T: std::str::FromStr>(word: &str, what: &str) -> Result<T, String> {
    word.parse().map_err(|_| bad(what, word))
}

/// `name` uncompressed in wire form, lowercased (RFC 4034 6.2), a
/// relative one below `origin`.
fn wire_name(out: &mut Vec<u8>, word: &str, origin: &Name) -> Result<(), String> {
    let name = Name::from_ascii(word).map_err(|e| format!("bad name '{word}': {e}"))?;
    let name = if name.is_fqdn() {
        name
    } else {
        name.append_domain(origin)
            .map_err(|e| format!("bad name '{word}': {e}"))?
    };
    for label in name.iter() {
        out.push(label.len() as u8);
        out.extend(label.to_ascii_lowercase());
    }
    out.push(0);
    Ok(())
}

/// Base64 split over several words.
fn base64(words: &[String]) -> Result<Vec<u8>, String> {
    let text = words.concat();
    base64::engine::general_purpose::STANDARD
        .decode(&text)
        .map_err(|e| format!("bad base64 '{text}': {e}"))
}

/// An RRSIG time: `YYYYMMDDHHmmSS` (UTC) or seconds since 1970 (RFC 4034 3.2).
fn time(word: &str) -> Result<u32, String> {
    let digits = word.len() == 14 && word.bytes().all(|b| b.is_ascii_digit());
    if !digits {
        return number(word, "time");
    }
    let n = |a: usize, b: usize| word[a..b].parse::<i64>().map_err(|_| bad("time", word));
    let (y, m, d) = (n(0, 4)?, n(4, 6)?, n(6, 8)?);
    // Days from the civil date (proleptic Gregorian calendar).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let secs = days * 86_400 + n(8, 10)? * 3600 + n(10, 12)? * 60 + n(12, 14)?;
    // Serial number arithmetic (RFC 4034 3.1.5): times wrap past 2106.
    Ok(secs.rem_euclid(1 << 32) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn times_read_as_rfc_4034_writes_them() {
        assert_eq!(time("19700101000000"), Ok(0));
        assert_eq!(time("20160426031301"), Ok(1_461_640_381));
        assert_eq!(time("1461640381"), Ok(1_461_640_381));
        assert!(time("2016042603130x").is_err());
    }

    #[test]
    fn an_nsec_bitmap_has_one_window_per_high_byte() {
        let origin = Name::from_ascii("example.").expect("test data");
        let wire = nsec(&words("b A MX RRSIG NSEC CAA"), &origin).expect("test data");
        let name = b"\x01b\x07example\x00";
        assert_eq!(&wire[..name.len()], name);
        // window 0: A (1), MX (15), RRSIG (46), NSEC (47); window 1: CAA (257)
        let bitmap = &wire[name.len()..];
        assert_eq!(bitmap, &[0, 6, 0x40, 0x01, 0, 0, 0, 0x03, 1, 1, 0x40]);
    }

    #[test]
    fn bad_data_is_an_error_naming_the_field() {
        let origin = Name::root();
        assert!(rrsig(&words("A 8 2 60 1 2 3 x."), &origin)
            .expect_err("bad data")
            .contains("needs"));
        assert!(ds(&words("1 8 2 abc")).expect_err("bad data").contains("digest"));
        assert!(dnskey(&words("257 3 8 !!!")).expect_err("bad data").contains("base64"));
        assert_eq!(
            ds(&words("60485 5 1 2BB1")).expect("test data"),
            vec![0xec, 0x45, 5, 1, 0x2b, 0xb1]
        );
    }
}
