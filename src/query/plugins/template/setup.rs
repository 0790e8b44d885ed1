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

use std::any::Any;
use std::sync::Arc;

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{DNSClass, Name, RecordType};

use crate::corefile::args::{zone, Args};
use crate::corefile::blocks::Directive;
use crate::corefile::gotmpl::Template;
use crate::corefile::lexer::Word;
use crate::corefile::options::{self, Opt, MANY};
use crate::corefile::problem::ConfigError;
use crate::corefile::values::{class, rcode_by_name, record_type, regex};
use crate::query::plugins::chain::Setup;

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

/// A block's `template` directives, in the order written: one plugin
/// that tries them in turn.
#[derive(Debug, Clone)]
pub struct TemplatesConfig(pub Vec<TemplateConfig>);

/// The block's templates so far (`earlier`, the block's `template` setup
/// if it has one) with `d`'s after them; `None` when there are none.
pub fn parse(
    d: &Directive,
    (block_zones, earlier): (&[Name], Option<&Arc<dyn Setup>>),
    errors: &mut Vec<ConfigError>,
) -> Option<Arc<dyn Setup>> {
    let mut list = listed(earlier);
    list.extend(template(d, block_zones, errors));
    (!list.is_empty()).then(|| Arc::new(TemplatesConfig(list)) as Arc<dyn Setup>)
}

/// The templates of a block's `template` setup (none without one).
pub fn listed(setup: Option<&Arc<dyn Setup>>) -> Vec<TemplateConfig> {
    let templates = setup.and_then(|s| (&**s as &dyn Any).downcast_ref::<TemplatesConfig>());
    templates.map(|t| t.0.clone()).unwrap_or_default()
}

/// One `template` directive.
/// A zone of `template`'s arguments; one that is no name is left out with
/// a warning, as CoreDNS's `OriginsFromArgsOrServerBlock` leaves it out
/// (a template whose zones are all left out answers nothing).
fn lenient_zone(word: &Word) -> Option<Name> {
    let mut not_a_name = Vec::new();
    let name = zone(word, &mut not_a_name);
    for e in not_a_name {
        tracing::warn!(target: "template", "{e}; left out, as CoreDNS leaves it out");
    }
    name
}

fn template(d: &Directive, block_zones: &[Name], errors: &mut Vec<ConfigError>) -> Option<TemplateConfig> {
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
    let mut zones: Vec<Name> = zone_words.iter().filter_map(lenient_zone).collect();
    if zone_words.is_empty() {
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
            Ok(t) => {
                for f in &t.unknown_fields {
                    tracing::warn!(
                        target: "template",
                        "{}: template: {} template: field '{f}' is not one a query has (.Name .Zone .Class .Type \
                         .Regex .Remote .Match .Group[.KEY] .Question[.Name|.Qtype|.Qclass] .Message.Question .Meta \
                         .Var[.NAME]): each query it matches fails (SERVFAIL), as in CoreDNS",
                        w.pos,
                        a.name.text
                    );
                }
                list.push(t)
            }
            Err(e) => errors.push(ConfigError::new(
                &w.pos,
                format!("template: could not compile {} template: {e}", a.name.text),
            )),
        }
    }
}

#[cfg(test)]
mod tests;
