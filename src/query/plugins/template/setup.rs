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
//! (EXPRESSION: the expr language's subset in [`crate::corefile::expr`].)

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{DNSClass, Name, RecordType};

use crate::corefile::args::{zone, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::gotmpl::Template;
use crate::corefile::lexer::Word;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;

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
    pub exprs: Vec<crate::corefile::expr::Program>,
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
    options::read("template", &d.options, OPTIONS, &mut cfg, errors);
    Some(cfg)
}

/// The options of a `template` block.
const OPTIONS: &[Opt<TemplateConfig>] = &[
    Opt::new("match", (1, MANY), |a, cfg, errors| {
        cfg.regex.extend(a.args.iter().filter_map(|w| regex(w, errors)))
    }),
    Opt::new("answer", (1, MANY), |a, cfg, errors| {
        section(a, &mut cfg.answer, errors)
    }),
    Opt::new("additional", (1, MANY), |a, cfg, errors| {
        section(a, &mut cfg.additional, errors)
    }),
    Opt::new("authority", (1, MANY), |a, cfg, errors| {
        section(a, &mut cfg.authority, errors)
    }),
    Opt::new("rcode", (1, 1), |a, cfg, errors| match rcode_by_name(&a.args[0].text) {
        Some(code) => cfg.rcode = <ResponseCode as From<u16>>::from(code),
        None => errors.push(ConfigError::new(
            &a.args[0].pos,
            format!(
                "template: unknown rcode '{}' (e.g. NOERROR, NXDOMAIN, SERVFAIL, REFUSED)",
                a.args[0].text
            ),
        )),
    }),
    Opt::new("ederror", (1, 2), |a, cfg, errors| {
        match a.args[0].text.parse::<u16>() {
            Ok(code) => cfg.ederror = Some((code, a.args.get(1).map(|w| w.text.clone()).unwrap_or_default())),
            _ => errors.push(ConfigError::new(
                &a.args[0].pos,
                format!(
                    "template: '{}' is not an extended DNS error code (0..65535)",
                    a.args[0].text
                ),
            )),
        }
    }),
    Opt::new("fallthrough", (0, MANY), |a, cfg, errors| {
        cfg.fallthrough = Some(a.args.iter().filter_map(|w| zone(w, errors)).collect())
    }),
    // CoreDNS ignores its arguments too: CNAME answers are always chased.
    Opt::new("upstream", (0, MANY), |_, _, _| {}),
    Opt::new("var", (0, MANY), |a, c, e| vars::var(a, &mut c.vars, e)),
    Opt::new("expr", (0, MANY), |a, c, e| {
        vars::condition(a, &c.vars, &mut c.exprs, e)
    }),
];

/// `answer|additional|authority TEMPLATE...`: each compiled into `list`.
fn section(a: &Args<'_>, list: &mut Vec<Template>, errors: &mut Vec<ConfigError>) {
    for w in a.args {
        match Template::parse(&w.text) {
            Ok(t) => list.push(t),
            Err(e) => errors.push(ConfigError::new(
                &w.pos,
                format!("template: could not compile {} template: {e}", a.name.text),
            )),
        }
    }
}

#[cfg(test)]
mod tests;
