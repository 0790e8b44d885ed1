//! One query-log line from a `log` format: the placeholders of CoreDNS's
//! replacer (`{type}`, `{name}`, `{class}`, `{proto}`, `{size}`,
//! `{remote}`, `{port}`, `{local}`, `{>id}`, `{>opcode}`, `{>do}`,
//! `{>bufsize}`, `{rcode}`, `{rsize}`, `{duration}`, `{>rflags}`) and the
//! log plugin's own metadata `{/log/class}` and `{/log/type}`; other
//! `{/LABEL}` metadata is what the block's `metadata` knows of the query
//! (`{/view/name}`, `{/kubernetes/client-namespace}`), else `-` (as
//! CoreDNS writes metadata nobody set). `{local}` is `-`: the
//! address a query came in on is not kept with the line. Anything else in
//! braces is literal text, as in CoreDNS.
//!
//! The reply's type and class (CoreDNS's `response.Typify`/`Classify`)
//! are worked out on the answering thread from the reply's header and
//! authority section ([`typify`]), so the `class` filter is decided there.

use std::net::SocketAddr;

use hickory_proto::op::{Message, ResponseCode};

use crate::metrics::{rcode_name, Transport};
use crate::query::request::walk::{skip_name, Records, Section};

/// CoreDNS's response types, in `response.Type`'s order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RespType {
    NoError,
    NameError,
    ServerError,
    NoData,
    Delegation,
    Meta,
    Update,
    OtherError,
}

impl RespType {
    pub fn name(self) -> &'static str {
        match self {
            RespType::NoError => "NOERROR",
            RespType::NameError => "NXDOMAIN",
            RespType::ServerError => "SERVERERROR",
            RespType::NoData => "NODATA",
            RespType::Delegation => "DELEGATION",
            RespType::Meta => "META",
            RespType::Update => "UPDATE",
            RespType::OtherError => "OTHERERROR",
        }
    }

    /// The class `log { class ... }` filters on.
    pub fn class(self) -> &'static str {
        match self {
            RespType::NoError | RespType::Delegation => "success",
            RespType::NameError | RespType::NoData => "denial",
            _ => "error",
        }
    }
}

/// The type of `reply` (wire form), as CoreDNS's `response.Typify`
/// (expired signatures are not looked for: clusterdns signs nothing).
pub fn typify(reply: &[u8]) -> RespType {
    let Some(h) = reply.get(..12) else {
        return RespType::OtherError;
    };
    let count = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
    let (opcode, rcode) = ((h[2] >> 3) & 0x0f, h[3] & 0x0f);
    let (qd, an) = (count(4), count(6));
    match opcode {
        5 => return RespType::Update,
        4 => return RespType::Meta,
        _ => {}
    }
    if qd > 0 {
        let Some(end) = skip_name(reply, 12) else {
            return RespType::OtherError;
        };
        let qtype = reply.get(end..end + 2).map(|t| u16::from_be_bytes([t[0], t[1]]));
        if matches!(qtype, Some(251 | 252)) {
            return RespType::Meta;
        }
    }
    match (an > 0, rcode) {
        (true, 0) => return RespType::NoError,
        (true, 3) => return RespType::OtherError,
        _ => {}
    }
    let (mut soa, mut delegation) = (false, false);
    let records = Records::of(reply).into_iter().flatten();
    let authority = records.take_while(|rr| rr.section != Section::Additional);
    for rr in authority.filter(|rr| rr.section == Section::Authority) {
        soa |= rr.rtype == 6;
        delegation |= rr.rtype == 2;
    }
    match rcode {
        0 if soa => RespType::NoData,
        3 => RespType::NameError,
        2 | 4 => RespType::ServerError,
        0 if delegation => RespType::Delegation,
        0 => RespType::NoError,
        _ => RespType::OtherError,
    }
}

/// One piece of a parsed format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Text(String),
    Label(&'static str),
    Meta(String),
}

const LABELS: &[&str] = &[
    "{type}",
    "{name}",
    "{class}",
    "{proto}",
    "{size}",
    "{remote}",
    "{port}",
    "{local}",
    "{>id}",
    "{>opcode}",
    "{>do}",
    "{>bufsize}",
    "{rcode}",
    "{rsize}",
    "{duration}",
    "{>rflags}",
];

/// Splits `format` into literal text, labels and metadata, as CoreDNS's
/// replacer does: each `}` closes the nearest `{` before it; a braced word
/// that is no label nor `{/...}` stays literal text.
pub fn parse(format: &str) -> Vec<Node> {
    let mut nodes = Vec::new();
    let mut text = String::new();
    let mut rest = format;
    while let Some(close) = rest.find('}') {
        let open = rest[..close].rfind('{');
        let braced = open.map(|o| &rest[o..=close]);
        let node = match braced {
            Some(b) => LABELS
                .iter()
                .find(|l| **l == b)
                .map(|l| Node::Label(l))
                .or_else(|| b.strip_prefix("{/").map(|m| Node::Meta(m[..m.len() - 1].to_string()))),
            None => None,
        };
        match (node, open) {
            (Some(n), Some(o)) => {
                text.push_str(&rest[..o]);
                if !text.is_empty() {
                    nodes.push(Node::Text(std::mem::take(&mut text)));
                }
                nodes.push(n);
            }
            _ => text.push_str(&rest[..=close]),
        }
        rest = &rest[close + 1..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        nodes.push(Node::Text(text));
    }
    nodes
}

/// What one line is made of.
pub struct Facts<'a> {
    pub peer: SocketAddr,
    pub transport: Transport,
    pub request: &'a Message,
    pub size: usize,
    /// The reply's header bytes 2..4 (flags) and its length.
    pub flags: [u8; 2],
    pub reply_len: usize,
    pub rcode: ResponseCode,
    pub secs: f64,
    pub kind: RespType,
    /// The block's `metadata`, when it has one: what `{/LABEL}` reads.
    pub metadata: Option<&'a crate::query::metadata::Metadata>,
    /// The labels the query's handling set (`trace/traceid`).
    pub carried: &'a crate::query::metadata::Carried,
}

/// Writes the line `nodes` make of `f` into `out`.
pub fn render(nodes: &[Node], f: &Facts<'_>, out: &mut String) {
    use std::fmt::Write;
    for n in nodes {
        let _ = match n {
            Node::Text(t) => write!(out, "{t}"),
            Node::Meta(m) if m == "log/class" => write!(out, "{}", f.kind.class()),
            Node::Meta(m) if m == "log/type" => write!(out, "{}", f.kind.name()),
            Node::Meta(m) => write!(out, "{}", metadata(f, m).as_deref().unwrap_or("-")),
            Node::Label(l) => label(l, f, out),
        };
    }
}

/// The value of metadata `label` for the line's query, when the block's
/// `metadata` holds its name and a plugin sets it ("" is no value, `-`).
fn metadata(f: &Facts<'_>, label: &str) -> Option<String> {
    let name = f.request.queries.first()?.name();
    let m = f.metadata.filter(|m| m.covers(name))?;
    if let Some(v) = f.carried.value(label) {
        return Some(v);
    }
    let subnet = || crate::query::metadata::subnet_of(f.request);
    m.value_with(label, (name, f.peer.ip()), subnet)
        .filter(|v| !v.is_empty())
}

fn label(l: &str, f: &Facts<'_>, out: &mut String) -> std::fmt::Result {
    use std::fmt::Write;
    let q = f.request.queries.first();
    let edns = f.request.edns.as_ref();
    let tcp = f.transport == Transport::Tcp;
    match l {
        "{type}" => q.map_or(Ok(()), |q| write!(out, "{}", q.query_type())),
        "{name}" => {
            q.inspect(|q| presentation(q.name(), out));
            Ok(())
        }
        "{class}" => q.map_or(Ok(()), |q| write!(out, "{}", q.query_class())),
        "{proto}" => write!(out, "{}", f.transport.label()),
        "{size}" => write!(out, "{}", f.size),
        "{remote}" if f.peer.is_ipv6() => write!(out, "[{}]", f.peer.ip()),
        "{remote}" => write!(out, "{}", f.peer.ip()),
        "{port}" => write!(out, "{}", f.peer.port()),
        "{>id}" => write!(out, "{}", f.request.metadata.id),
        "{>opcode}" => write!(out, "{}", u8::from(f.request.metadata.op_code)),
        "{>do}" => write!(out, "{}", edns.is_some_and(|e| e.flags().dnssec_ok)),
        "{>bufsize}" if tcp => write!(out, "65535"),
        "{>bufsize}" => write!(out, "{}", edns.map_or(512, |e| e.max_payload().max(512))),
        "{rcode}" => write!(out, "{}", rcode_name(f.rcode)),
        "{rsize}" => write!(out, "{}", f.reply_len),
        "{duration}" => write!(out, "{}s", f.secs),
        "{>rflags}" => write!(out, "{}", flags(f.flags)),
        _ => write!(out, "-"),
    }
}

/// A name lowercased as CoreDNS's log prints it (miekg/dns's text form):
/// `. ' @ ; ( ) " \` and space escaped with a backslash, bytes outside
/// printable ASCII as `\DDD`, the rest (`%`, `*`, `_`...) as they are.
pub fn presentation(name: &hickory_proto::rr::Name, out: &mut String) {
    use std::fmt::Write;
    if name.is_root() {
        out.push('.');
    }
    for label in name.iter() {
        for b in label.iter().map(u8::to_ascii_lowercase) {
            match b {
                b'.' | b' ' | b'\'' | b'@' | b';' | b'(' | b')' | b'"' | b'\\' => {
                    out.push('\\');
                    out.push(char::from(b));
                }
                0x21..=0x7e => out.push(char::from(b)),
                _ => {
                    let _ = write!(out, "\\{b:03}");
                }
            }
        }
        out.push('.');
    }
}

/// The reply's header flags as CoreDNS lists them.
fn flags(f: [u8; 2]) -> String {
    let names = [
        (f[0] & 0x80, "qr"),
        (f[0] & 0x04, "aa"),
        (f[0] & 0x02, "tc"),
        (f[0] & 0x01, "rd"),
        (f[1] & 0x80, "ra"),
        (f[1] & 0x40, "z"),
        (f[1] & 0x20, "ad"),
        (f[1] & 0x10, "cd"),
    ];
    let on: Vec<&str> = names.iter().filter(|(bit, _)| *bit != 0).map(|(_, n)| *n).collect();
    on.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_split_as_coredns_does() {
        assert_eq!(
            parse("{when} {type} {/log/class} x}"),
            vec![
                Node::Text("{when} ".into()),
                Node::Label("{type}"),
                Node::Text(" ".into()),
                Node::Meta("log/class".into()),
                Node::Text(" x}".into()),
            ]
        );
        assert_eq!(
            parse("{ {name} }"),
            vec![Node::Text("{ ".into()), Node::Label("{name}"), Node::Text(" }".into())]
        );
    }

    #[test]
    fn replies_typed_as_coredns_does() {
        // Header: id, flags (qr, rcode), counts; no question.
        let head = |rcode: u8, an: u8, ns: u8| vec![0, 1, 0x81, rcode, 0, 0, 0, an, 0, ns, 0, 0];
        assert_eq!(typify(&head(3, 0, 0)), RespType::NameError);
        assert_eq!(typify(&head(2, 0, 0)), RespType::ServerError);
        assert_eq!(typify(&head(0, 0, 0)), RespType::NoError);
        // One authority SOA at the root: NODATA; an NS: a delegation.
        let mut soa = head(0, 0, 1);
        soa.extend([0, 0, 6, 0, 1, 0, 0, 0, 1, 0, 0]);
        assert_eq!(typify(&soa), RespType::NoData);
        let mut ns = head(0, 0, 1);
        ns.extend([0, 0, 2, 0, 1, 0, 0, 0, 1, 0, 1, 0]);
        assert_eq!(typify(&ns), RespType::Delegation);
        assert_eq!(RespType::NoData.class(), "denial");
    }
}
