//! Resource records as zone-file text, both ways: a table's expected
//! records and a canned upstream's records are parsed from text, and every
//! record of a reply is printed back in one canonical form, so want and got
//! compare as strings (`example.org. 300 IN A 127.0.0.1`, TXT strings quoted).

use std::net::{Ipv4Addr, Ipv6Addr};

use hickory_proto::rr::rdata::{A, AAAA, CNAME, HINFO, HTTPS, MX, NS, PTR, SOA, SRV, SVCB, TXT};
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};

/// Splits a line into fields: whitespace separates, `"..."` is one field
/// (kept with its quotes, `\"` and `\\` escaped inside).
pub fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut field = String::new();
        if c == '"' {
            field.push(chars.next().unwrap_or('"'));
            while let Some(c) = chars.next() {
                field.push(c);
                if c == '\\' {
                    if let Some(n) = chars.next() {
                        field.push(n);
                    }
                } else if c == '"' {
                    break;
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                field.push(c);
                chars.next();
            }
        }
        out.push(field);
    }
    out
}

/// The bytes of one character-string field (`"a b"` or `ab`), unescaped.
fn unquote(field: &str) -> Vec<u8> {
    let inner = field
        .strip_prefix('"')
        .and_then(|f| f.strip_suffix('"'))
        .unwrap_or(field);
    let bytes = inner.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() && bytes[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            let n =
                (bytes[i + 1] - b'0') as u16 * 100 + (bytes[i + 2] - b'0') as u16 * 10 + (bytes[i + 3] - b'0') as u16;
            out.push(u8::try_from(n).unwrap_or(b'?'));
            i += 4;
        } else if bytes[i] == b'\\' && i + 1 < bytes.len() {
            out.push(bytes[i + 1]);
            i += 2;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// One character-string as CoreDNS prints it: quoted, `"` and `\` escaped,
/// bytes outside printable ASCII as `\DDD`.
fn quote(bytes: &[u8]) -> String {
    let mut s = String::from("\"");
    for &b in bytes {
        match b {
            b'"' | b'\\' => {
                s.push('\\');
                s.push(char::from(b));
            }
            0x20..=0x7e => s.push(char::from(b)),
            _ => s.push_str(&format!("\\{b:03}")),
        }
    }
    s.push('"');
    s
}

/// A name as zone-file text; `\DDD` and `\X` escapes (a space, a dot
/// inside a label) are decoded into the label's bytes.
pub fn name(text: &str) -> Result<Name, String> {
    let text = if text.ends_with('.') {
        text.to_string()
    } else {
        format!("{text}.")
    };
    if !text.contains('\\') {
        return Name::from_ascii(&text).map_err(|e| format!("bad name '{text}': {e}"));
    }
    let (mut labels, mut label) = (Vec::new(), Vec::new());
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'\\' => {
                let first = bytes.next().ok_or_else(|| format!("bad escape in '{text}'"))?;
                if first.is_ascii_digit() {
                    let digits = [first, bytes.next().unwrap_or(b'x'), bytes.next().unwrap_or(b'x')];
                    let n: u8 = std::str::from_utf8(&digits)
                        .ok()
                        .and_then(|d| d.parse().ok())
                        .ok_or_else(|| format!("bad escape in '{text}'"))?;
                    label.push(n);
                } else {
                    label.push(first);
                }
            }
            b'.' => labels.push(std::mem::take(&mut label)),
            other => label.push(other),
        }
    }
    let mut n = Name::from_labels(labels).map_err(|e| format!("bad name '{text}': {e}"))?;
    n.set_fqdn(true);
    Ok(n)
}

fn num<T: std::str::FromStr>(text: Option<&String>, what: &str) -> Result<T, String> {
    text.and_then(|t| t.parse().ok())
        .ok_or_else(|| format!("bad or missing {what}"))
}

/// Parses `NAME TTL CLASS TYPE RDATA...` (all five parts required).
pub fn parse(line: &str) -> Result<Record, String> {
    let f = fields(line);
    if f.len() < 4 {
        return Err(format!("record needs NAME TTL CLASS TYPE RDATA: '{line}'"));
    }
    let owner = name(&f[0])?;
    let ttl: u32 = num(f.get(1), "TTL")?;
    let class: DNSClass = f[2]
        .to_ascii_uppercase()
        .parse()
        .map_err(|_| format!("bad class '{}'", f[2]))?;
    let rtype: RecordType = f[3]
        .to_ascii_uppercase()
        .parse()
        .map_err(|_| format!("bad type '{}'", f[3]))?;
    let r = &f[4..];
    let ip4 = |t: Option<&String>| num::<Ipv4Addr>(t, "IPv4 address");
    let data = match rtype {
        RecordType::A => RData::A(A(ip4(r.first())?)),
        RecordType::AAAA => RData::AAAA(AAAA(num::<Ipv6Addr>(r.first(), "IPv6 address")?)),
        RecordType::CNAME => RData::CNAME(CNAME(name(r.first().ok_or("missing target")?)?)),
        RecordType::PTR => RData::PTR(PTR(name(r.first().ok_or("missing target")?)?)),
        RecordType::NS => RData::NS(NS(name(r.first().ok_or("missing target")?)?)),
        RecordType::MX => RData::MX(MX::new(
            num(r.first(), "preference")?,
            name(r.get(1).ok_or("missing exchange")?)?,
        )),
        RecordType::SRV => RData::SRV(SRV::new(
            num(r.first(), "priority")?,
            num(r.get(1), "weight")?,
            num(r.get(2), "port")?,
            name(r.get(3).ok_or("missing target")?)?,
        )),
        RecordType::SOA => RData::SOA(SOA::new(
            name(r.first().ok_or("missing mname")?)?,
            name(r.get(1).ok_or("missing rname")?)?,
            num(r.get(2), "serial")?,
            num(r.get(3), "refresh")?,
            num(r.get(4), "retry")?,
            num(r.get(5), "expire")?,
            num(r.get(6), "minimum")?,
        )),
        RecordType::TXT => RData::TXT(TXT::from_bytes(
            r.iter()
                .map(|s| unquote(s))
                .collect::<Vec<_>>()
                .iter()
                .map(Vec::as_slice)
                .collect(),
        )),
        RecordType::HINFO if r.len() == 2 => RData::HINFO(HINFO::new(
            String::from_utf8_lossy(&unquote(&r[0])).into_owned(),
            String::from_utf8_lossy(&unquote(&r[1])).into_owned(),
        )),
        RecordType::RRSIG => crate::dnssec::parse(r)?,
        RecordType::NSEC => crate::dnssec::nsec(r)?,
        RecordType::DS => crate::dnssec::ds(r)?,
        RecordType::DNSKEY => crate::dnssec::dnskey(r)?,
        other => return Err(format!("type {other} is not supported in tables")),
    };
    let mut record = Record::from_rdata(owner, ttl, data);
    record.dns_class = class;
    Ok(record)
}

/// The canonical text of a record from a reply.
pub fn show(r: &Record) -> String {
    let data = match &r.data {
        RData::TXT(t) => t.txt_data.iter().map(|s| quote(s)).collect::<Vec<_>>().join(" "),
        RData::HINFO(h) => format!("{} {}", quote(&h.cpu), quote(&h.os)),
        RData::Unknown { rdata, .. } if r.record_type() == RecordType::DNAME => wire_name(&rdata.anything),
        RData::Unknown { rdata, .. } if r.record_type() == RecordType::RRSIG => {
            crate::dnssec::show(&rdata.anything).unwrap_or_else(|| "?".into())
        }
        RData::Unknown { rdata, .. } if r.record_type() == RecordType::NSEC => {
            crate::dnssec::show_nsec(&rdata.anything).unwrap_or_else(|| "?".into())
        }
        RData::Unknown { rdata, .. } if r.record_type() == RecordType::DS => {
            crate::dnssec::show_ds(&rdata.anything).unwrap_or_else(|| "?".into())
        }
        RData::Unknown { rdata, .. } if r.record_type() == RecordType::DNSKEY => {
            crate::dnssec::show_dnskey(&rdata.anything).unwrap_or_else(|| "?".into())
        }
        RData::SVCB(s) | RData::HTTPS(HTTPS(s)) => svcb(s),
        other => other.to_string(),
    };
    format!("{} {} {} {} {}", r.name, r.ttl, r.dns_class, r.record_type(), data)
}

/// SVCB and HTTPS data as CoreDNS prints them: `PRIORITY TARGET key="value"...`.
fn svcb(s: &SVCB) -> String {
    let mut out = format!("{} {}", s.svc_priority, s.target_name);
    for (key, value) in &s.svc_params {
        let value = value.to_string();
        out.push_str(&format!(" {key}=\"{}\"", value.trim_end_matches(',').trim_matches('"')));
    }
    out
}

/// A name in uncompressed wire form (a DNAME's data) as text; `?` when it
/// does not decode.
fn wire_name(wire: &[u8]) -> String {
    let mut labels = Vec::new();
    let mut rest = wire;
    while let Some((&len, tail)) = rest.split_first() {
        if len == 0 {
            return Name::from_labels(labels).map_or("?".into(), |n| n.to_string());
        }
        let Some((label, tail)) = tail.split_at_checked(usize::from(len)) else {
            break;
        };
        labels.push(label);
        rest = tail;
    }
    "?".into()
}

/// The canonical text of an expected record line: parsed and shown again
/// when its type is known, else its fields joined by single spaces.
pub fn canonical(line: &str) -> String {
    match parse(line) {
        Ok(r) => show(&r),
        Err(_) => fields(line).join(" "),
    }
}
