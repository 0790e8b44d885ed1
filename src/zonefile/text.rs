//! The text of a zone file made readable for hickory-proto's parser and
//! read as miekg/dns (CoreDNS's) reads it: DNAME and DNSSEC type words
//! rewritten ([`rewrite`]), escaped bytes in owner names kept through the
//! parser ([`undot`]), `@` in record data ([`at_origin`]), and records
//! without a TTL where there is no `$TTL` ([`with_default_ttl`]).

use std::borrow::Cow;
use std::ops::Range;

use hickory_proto::rr::Name;

use super::dnssec;
use super::words::{entries, splice};

/// The type word of every record entry.
fn type_words(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    entries(text)
        .into_iter()
        .filter(|e| !e.directive(text))
        .filter_map(|e| e.type_at(text).map(|t| e.words[t].clone()))
}

/// Which of `types` (its index there) the first record of one of them in
/// `text` has.
pub(super) fn which_type(text: &str, types: &[&str]) -> Option<usize> {
    type_words(text).find_map(|r| types.iter().position(|t| text[r.clone()].eq_ignore_ascii_case(t)))
}

/// `text` with the type word of every DNAME record replaced by ANAME,
/// every DNSSEC record written as the TXT record [`dnssec`] reads back, and
/// names with `_` inside a label (`my_host`, which hickory-proto's parser
/// refuses and miekg/dns reads) carried through as escaped bytes.
pub(super) fn rewrite(text: &str) -> Cow<'_, str> {
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    for e in entries(text).iter().filter(|e| !e.directive(text)) {
        if let Some(r) = e.owner() {
            let word = underscored(&text[r.clone()]);
            if word.contains('\\') {
                edits.push((r, escaped(&word)));
            }
        }
        let Some(at) = e.type_at(text) else {
            continue;
        };
        let r = e.words[at].clone();
        let word = &text[r.clone()];
        if word.eq_ignore_ascii_case("DNAME") {
            edits.push((r, "ANAME".to_string()));
        } else if let Some(kind) = dnssec::TYPES.iter().find(|t| word.eq_ignore_ascii_case(t)) {
            let data = e.words[at + 1..].iter().map(|w| &text[w.clone()]);
            let words: Vec<&str> = [dnssec::MARK, kind].into_iter().chain(data).collect();
            edits.push((r.start..e.end, format!("TXT {}", words.join(" "))));
            continue;
        }
        if NAMED.iter().any(|t| word.eq_ignore_ascii_case(t)) {
            for r in &e.words[at + 1..] {
                let name = underscored(&text[r.clone()]);
                if matches!(name, Cow::Owned(_)) {
                    edits.push((r.clone(), escaped(&name)));
                }
            }
        }
    }
    splice(text, edits)
}

/// The types whose data holds names (and otherwise numbers only), where a
/// name with `_` inside a label is carried through as an owner is.
const NAMED: [&str; 7] = ["CNAME", "DNAME", "NS", "PTR", "MX", "SRV", "SOA"];

/// `text` with a `$TTL 3600` first when it has no `$TTL`: miekg/dns
/// gives a record without a TTL 3600 then; hickory-proto refuses it.
pub(super) fn with_default_ttl(text: &str) -> String {
    let has_ttl = text.lines().any(|l| {
        l.split_whitespace()
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case("$TTL"))
    });
    if has_ttl {
        text.to_string()
    } else {
        format!("$TTL 3600\n{text}")
    }
}

/// `text` with every `@` word in a record's data (`CNAME @`, `SRV 0 0 80
/// @`) written as the origin it stands for (the last `$ORIGIN`, else
/// `origin`): hickory-proto's parser takes `@` only as an owner. An `@`
/// inside a quoted string is text, left as it is.
pub(super) fn at_origin<'t>(text: &'t str, origin: &Name) -> Cow<'t, str> {
    if !text.contains('@') {
        return Cow::Borrowed(text);
    }
    let mut current = origin.to_string();
    let mut edits = Vec::new();
    for e in entries(text) {
        let word = |i: usize| e.words.get(i).map(|r| &text[r.clone()]);
        if e.directive(text) {
            if let (Some(d), Some(o)) = (word(0), word(1)) {
                if d.eq_ignore_ascii_case("$ORIGIN") {
                    current = if o.ends_with('.') {
                        o.to_string()
                    } else {
                        format!("{o}.{current}")
                    };
                }
            }
            continue;
        }
        let text_data = e.type_at(text).is_some_and(|t| {
            let kind = &text[e.words[t].clone()];
            kind.eq_ignore_ascii_case("TXT") || kind.eq_ignore_ascii_case("SPF")
        });
        // In TXT data a bare `@` is the text "@", as miekg/dns reads it.
        let with = if text_data {
            "\"@\"".to_string()
        } else {
            current.clone()
        };
        let data = e.words.iter().skip(usize::from(e.owned));
        edits.extend(
            data.filter(|r| &text[(*r).clone()] == "@")
                .map(|r| (r.clone(), with.clone())),
        );
    }
    splice(text, edits)
}

/// Stands for an escaped byte (`\DDD`, `\X`: a dot or a space inside a
/// label) in an owner, which hickory-proto's parser refuses: the byte's
/// three digits go between the two halves. Put back by [`undot`] after
/// parsing.
const ESCAPE: (&str, &str) = ("zq0clusterdns", "0qz");

/// `word` with every `_` inside a label (not its first byte: `my_host`,
/// not `_srv`) written `\\095`, which hickory-proto's parser refuses bare
/// and [`escaped`] then carries through as any escaped byte.
fn underscored(word: &str) -> Cow<'_, str> {
    let inner = |l: &str| l.len() > 1 && l[1..].contains('_');
    if !word.split('.').any(inner) {
        return Cow::Borrowed(word);
    }
    let labels: Vec<String> = word
        .split('.')
        .map(|l| match l.split_at_checked(1) {
            Some((head, tail)) => format!("{head}{}", tail.replace('_', "\\095")),
            None => l.to_string(),
        })
        .collect();
    Cow::Owned(labels.join("."))
}

/// A name word with each escaped byte written as [`ESCAPE`].
pub(super) fn escaped(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 16);
    let mut chars = word.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let byte = match chars.next() {
            Some(d) if d.is_ascii_digit() => {
                let rest: String = [chars.next(), chars.next()].into_iter().flatten().collect();
                format!("{d}{rest}").parse::<u8>().ok()
            }
            Some(other) if other.is_ascii() => Some(other as u8),
            _ => None,
        };
        match byte {
            Some(b) => out.push_str(&format!("{}{b:03}{}", ESCAPE.0, ESCAPE.1)),
            None => out.push('\\'), // left for the parser to refuse
        }
    }
    out
}

/// `name` with every [`ESCAPE`] inside its labels made its byte again.
pub(super) fn undot(name: Name) -> Name {
    let marker = ESCAPE.0.as_bytes();
    let has = |l: &[u8]| l.windows(marker.len()).any(|w| w.eq_ignore_ascii_case(marker));
    if !name.iter().any(has) {
        return name;
    }
    let labels: Vec<Vec<u8>> = name.iter().map(unescape_label).collect();
    let mut fixed = Name::from_labels(labels).unwrap_or(name.clone());
    fixed.set_fqdn(name.is_fqdn());
    fixed
}

/// One label's [`ESCAPE`]s decoded.
fn unescape_label(label: &[u8]) -> Vec<u8> {
    let (head, tail) = (ESCAPE.0.as_bytes(), ESCAPE.1.as_bytes());
    let whole = head.len() + 3 + tail.len();
    let mut out = Vec::with_capacity(label.len());
    let mut i = 0;
    while i < label.len() {
        let piece = label.get(i..i + whole);
        let byte = piece
            .filter(|p| p[..head.len()].eq_ignore_ascii_case(head) && p[head.len() + 3..].eq_ignore_ascii_case(tail))
            .and_then(|p| {
                std::str::from_utf8(&p[head.len()..head.len() + 3])
                    .ok()?
                    .parse::<u8>()
                    .ok()
            });
        match byte {
            Some(b) => {
                out.push(b);
                i += whole;
            }
            None => {
                out.push(label[i]);
                i += 1;
            }
        }
    }
    out
}
