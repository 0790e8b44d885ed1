//! How `clusterdns check` prints `rewrite`: every option with its value,
//! defaults written out, so the printout loads again to the same values.

use crate::corefile::words::{quote, Block};
use crate::query::plugins::rewrite::setup::rule::{EdnsAction, EdnsData, EdnsRule, Matcher, RewriteRule, RuleKind};

pub(crate) fn rewrite(b: &mut Block, r: &RewriteRule) {
    let flow = if r.stop { "stop" } else { "continue" };
    let rule = match &r.kind {
        RuleKind::Name {
            matcher: m,
            to,
            auto,
            answers,
        } => {
            let mut s = format!("name {} {}", matcher(m), quote(to));
            if *auto {
                s.push_str(" answer auto");
            }
            for a in answers {
                let what = if a.value { "value" } else { "name" };
                s.push_str(&format!(
                    " answer {what} {} {}",
                    quote(a.pattern.as_str()),
                    quote(&a.to)
                ));
            }
            s
        }
        RuleKind::Type { from, to } => format!("type {from} {to}"),
        RuleKind::Class { from, to } => format!("class {from} {to}"),
        RuleKind::Ttl { matcher: m, min, max } => format!("ttl {} {min}-{max}", matcher(m)),
        RuleKind::Cname { matcher: m, to } => format!("cname {} {}", matcher(m), quote(to)),
        RuleKind::Rcode { matcher: m, from, to } => format!(
            "rcode {} {} {}",
            matcher(m),
            crate::metrics::rcode_name(*from),
            crate::metrics::rcode_name(*to)
        ),
        RuleKind::Edns0 { action, option, revert } => {
            let rule = edns0(*action, option);
            if *revert {
                format!("{rule} revert")
            } else {
                rule
            }
        }
    };
    b.line(1, format_args!("rewrite {flow} {rule}"));
}

fn matcher(m: &Matcher) -> String {
    match m {
        Matcher::Exact(s) => format!("exact {s}"),
        Matcher::Prefix(s) => format!("prefix {s}"),
        Matcher::Suffix(s) => format!("suffix {s}"),
        Matcher::Substring(s) => format!("substring {s}"),
        Matcher::Regex(r) => format!("regex {}", quote(r.as_str())),
    }
}

fn edns0(action: EdnsAction, option: &EdnsRule) -> String {
    let action = match action {
        EdnsAction::Unset => {
            return match option {
                EdnsRule::Nsid => "edns0 nsid unset".into(),
                EdnsRule::Subnet { .. } => "edns0 subnet unset".into(),
                EdnsRule::Local { code, .. } => format!("edns0 local unset 0x{code:04x}"),
            }
        }
        EdnsAction::Set => "set",
        EdnsAction::Replace => "replace",
        EdnsAction::Append => "append",
    };
    match option {
        EdnsRule::Nsid => format!("edns0 nsid {action}"),
        EdnsRule::Subnet { v4, v6 } => format!("edns0 subnet {action} {v4} {v6}"),
        EdnsRule::Local { code, data } => {
            let data = match data {
                EdnsData::Bytes(bytes) => format!("0x{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()),
                EdnsData::Qname => "{qname}".into(),
                EdnsData::Qtype => "{qtype}".into(),
                EdnsData::ClientIp => "{client_ip}".into(),
                EdnsData::ClientPort => "{client_port}".into(),
                EdnsData::Protocol => "{protocol}".into(),
                EdnsData::ServerIp => "{server_ip}".into(),
                EdnsData::ServerPort => "{server_port}".into(),
                EdnsData::Metadata(label) => format!("{{{label}}}"),
            };
            format!("edns0 local {action} 0x{code:04x} {data}")
        }
    }
}
