//! `template`: answers built from the question by Go-style templates.
//!
//! ```text
//! template CLASS TYPE [ZONE...] {
//!     match REGEX...                 (default: every name)
//!     answer RR...                   RR: a zone-file line, a template (see gotmpl)
//!     additional RR...
//!     authority RR...
//!     rcode CODE                     (NOERROR)
//!     ederror CODE [REASON]          RFC 8914 extended error (0..65535, as CoreDNS)
//!     fallthrough [ZONES...]         no regex matched: the next template or plugin
//!     upstream                       accepted; a CNAME answer is always chased
//!     var NAME EXPRESSION            a value for the templates (.Var.NAME), per match
//!     expr EXPRESSION                a condition all of which must hold to match
//! }
//! ```
//! (EXPRESSION: the expr language's subset in [`crate::config::expr`].)

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{DNSClass, Name, RecordType};

use super::args::{zone, Args};
use super::blocks::Directive;
use super::gotmpl::Template;
use super::lexer::Word;
use super::ConfigError;

mod vars;
pub use vars::Var;

/// One `template` directive.
#[derive(Debug, Clone)]
pub struct TemplateConfig {
    /// `None`: ANY.
    pub class: Option<DNSClass>,
    /// `None`: ANY.
    pub qtype: Option<RecordType>,
    pub zones: Vec<Name>,
    /// Empty: every name matches.
    pub regex: Vec<regex::Regex>,
    pub answer: Vec<Template>,
    pub additional: Vec<Template>,
    pub authority: Vec<Template>,
    pub rcode: ResponseCode,
    /// RFC 8914 extended error: code and extra text.
    pub ederror: Option<(u16, String)>,
    pub fallthrough: Option<Vec<Name>>,
    /// `var NAME EXPRESSION`, in order (each may use those before it).
    pub vars: Vec<vars::Var>,
    /// `expr EXPRESSION`: all must be true for a match.
    pub exprs: Vec<crate::config::expr::Program>,
}

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

pub fn parse(d: &Directive, block_zones: &[Name], errors: &mut Vec<ConfigError>) -> Option<TemplateConfig> {
    let a = Args::from(d);
    if !a.count(2, usize::MAX, errors) {
        return None;
    }
    let class = class(&d.args[0], errors);
    let qtype = record_type(&d.args[1], errors);
    // CoreDNS splits a quoted list of zones on spaces.
    let zone_words: Vec<Word> = d.args[2..]
        .iter()
        .flat_map(|w| {
            w.text.split_whitespace().map(|t| Word {
                text: t.to_string(),
                ..w.clone()
            })
        })
        .collect();
    let mut zones: Vec<Name> = zone_words.iter().filter_map(|w| zone(w, errors)).collect();
    if zones.is_empty() {
        zones = block_zones.to_vec();
    }
    let mut cfg = TemplateConfig {
        class: class?,
        qtype: qtype?,
        zones,
        regex: Vec::new(),
        answer: Vec::new(),
        additional: Vec::new(),
        authority: Vec::new(),
        rcode: ResponseCode::NoError,
        ederror: None,
        fallthrough: None,
        vars: Vec::new(),
        exprs: Vec::new(),
    };
    for line in &d.options {
        option(&Args::from(line), &mut cfg, errors);
    }
    Some(cfg)
}

fn option(a: &Args<'_>, cfg: &mut TemplateConfig, errors: &mut Vec<ConfigError>) {
    match a.name.text.as_str() {
        "match" if a.count(1, usize::MAX, errors) => cfg.regex.extend(a.args.iter().filter_map(|w| regex(w, errors))),
        section @ ("answer" | "additional" | "authority") if a.count(1, usize::MAX, errors) => {
            let list = match section {
                "answer" => &mut cfg.answer,
                "additional" => &mut cfg.additional,
                _ => &mut cfg.authority,
            };
            for w in a.args {
                match Template::parse(&w.text) {
                    Ok(t) => list.push(t),
                    Err(e) => errors.push(ConfigError::new(
                        &w.pos,
                        format!("template: could not compile {section} template: {e}"),
                    )),
                }
            }
        }
        "rcode" if a.count(1, 1, errors) => match rcode_by_name(&a.args[0].text) {
            Some(code) => cfg.rcode = <ResponseCode as From<u16>>::from(code),
            None => errors.push(ConfigError::new(
                &a.args[0].pos,
                format!("template: unknown rcode '{}' (e.g. NOERROR, NXDOMAIN, SERVFAIL, REFUSED)", a.args[0].text),
            )),
        },
        "ederror" if a.count(1, 2, errors) => match a.args[0].text.parse::<u16>() {
            Ok(code) => {
                cfg.ederror = Some((code, a.args.get(1).map(|w| w.text.clone()).unwrap_or_default()));
            }
            _ => errors.push(ConfigError::new(
                &a.args[0].pos,
                format!("template: '{}' is not an extended DNS error code (0..65535)", a.args[0].text),
            )),
        },
        "fallthrough" => cfg.fallthrough = Some(a.args.iter().filter_map(|w| zone(w, errors)).collect()),
        "upstream" => {} // CoreDNS ignores its arguments too: CNAME answers are always chased
        "var" => vars::var(a, cfg, errors),
        "expr" => vars::condition(a, cfg, errors),
        "match" | "answer" | "additional" | "authority" | "rcode" | "ederror" => {}
        other => errors.push(ConfigError::new(
            a.pos(),
            format!(
                "template: unknown option '{other}' (supported: match, answer, additional, authority, rcode, ederror, fallthrough, upstream)"
            ),
        )),
    }
}

#[cfg(test)]
mod tests;
