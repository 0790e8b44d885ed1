//! The one reading of the DNS words directives share: an rcode's name,
//! a class, a record type, a regular expression (`template`, `rewrite`,
//! `forward`).

use hickory_proto::rr::{DNSClass, RecordType};

use crate::corefile::lexer::Word;
use crate::corefile::problem::ConfigError;

/// The rcode names CoreDNS accepts (miekg/dns's `StringToRcode`).
const RCODES: [(&str, u16); 20] = [
    ("NOERROR", 0),
    ("FORMERR", 1),
    ("SERVFAIL", 2),
    ("NXDOMAIN", 3),
    ("NOTIMP", 4),
    ("REFUSED", 5),
    ("YXDOMAIN", 6),
    ("YXRRSET", 7),
    ("NXRRSET", 8),
    ("NOTAUTH", 9),
    ("NOTZONE", 10),
    ("BADSIG", 16),
    ("BADVERS", 16),
    ("BADKEY", 17),
    ("BADTIME", 18),
    ("BADMODE", 19),
    ("BADNAME", 20),
    ("BADALG", 21),
    ("BADTRUNC", 22),
    ("BADCOOKIE", 23),
];

/// The number of an rcode name (`NXDOMAIN`, ...).
pub fn rcode_by_name(name: &str) -> Option<u16> {
    RCODES.iter().find(|(n, _)| *n == name).map(|(_, code)| *code)
}

/// A class name (`IN`, `CH`, `HS`, `CS`, `NONE`) or `ANY` (`None`).
pub fn class(w: &Word, errors: &mut Vec<ConfigError>) -> Option<Option<DNSClass>> {
    match w.text.as_str() {
        "ANY" => Some(None),
        "IN" => Some(Some(DNSClass::IN)),
        "CH" => Some(Some(DNSClass::CH)),
        "HS" => Some(Some(DNSClass::HS)),
        "CS" => Some(Some(DNSClass::Unknown(2))),
        "NONE" => Some(Some(DNSClass::NONE)),
        other => {
            errors.push(ConfigError::new(&w.pos, format!("invalid query class '{other}'")));
            None
        }
    }
}

/// A record type name (`A`, `MX`, ...) or `ANY` (`None`).
pub fn record_type(w: &Word, errors: &mut Vec<ConfigError>) -> Option<Option<RecordType>> {
    match w.text.parse::<RecordType>() {
        Ok(RecordType::ANY) => Some(None),
        Ok(t) if !matches!(t, RecordType::Unknown(_)) && w.text == w.text.to_uppercase() => Some(Some(t)),
        _ => {
            errors.push(ConfigError::new(&w.pos, format!("invalid record type '{}'", w.text)));
            None
        }
    }
}

/// A compiled regular expression (Go's RE2 syntax is the `regex` crate's).
pub fn regex(w: &Word, errors: &mut Vec<ConfigError>) -> Option<regex::Regex> {
    if w.text.len() > 10_000 {
        errors.push(ConfigError::new(
            &w.pos,
            format!("regex pattern too long: {} > 10000", w.text.len()),
        ));
        return None;
    }
    match regex::Regex::new(&w.text) {
        Ok(r) => Some(r),
        Err(e) => {
            let first = e.to_string().lines().last().unwrap_or_default().to_string();
            errors.push(ConfigError::new(
                &w.pos,
                format!("could not parse regex '{}': {first}", w.text),
            ));
            None
        }
    }
}
