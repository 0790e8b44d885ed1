//! `rewrite edns0 local|nsid|subnet set|replace|append|unset ... [revert]`:
//! EDNS0 options changed in the request a forwarded query carries
//! upstream. One rule per `rewrite` (CoreDNS joins a block's lines into
//! one rule, so two edns0 rules in one block are refused there too).

use crate::corefile::lexer::Word;
use crate::corefile::problem::ConfigError;
use crate::query::plugins::rewrite::setup::rule::{EdnsAction, EdnsData, EdnsRule, RuleKind};

pub fn parse(field: &Word, args: &[&Word], errors: &mut Vec<ConfigError>) -> Option<RuleKind> {
    let [kind, action, rest @ ..] = args else {
        errors.push(ConfigError::new(
            &field.pos,
            "rewrite: too few arguments for an edns0 rule (edns0 local|nsid|subnet set|replace|append ...)",
        ));
        return None;
    };
    let action = match action.text.to_lowercase().as_str() {
        "set" => EdnsAction::Set,
        "replace" => EdnsAction::Replace,
        "append" => EdnsAction::Append,
        "unset" => return unset(kind, rest, errors),
        other => {
            errors.push(ConfigError::new(
                &action.pos,
                format!("rewrite: invalid edns0 action '{other}' (supported: set, replace, append, unset)"),
            ));
            return None;
        }
    };
    let (revert, rest) = match rest.split_last() {
        Some((last, init)) if last.text == "revert" => (true, init),
        _ => (false, rest),
    };
    if let Some(again) = rest.iter().find(|w| w.text.eq_ignore_ascii_case("edns0")) {
        errors.push(ConfigError::new(
            &again.pos,
            "rewrite: one edns0 rule per rewrite (CoreDNS reads a block as one rule): write another 'rewrite edns0 ...' line",
        ));
        return None;
    }
    let option = rule(kind, rest, errors)?;
    Some(RuleKind::Edns0 { action, option, revert })
}

/// The option an edns0 rule sets: `local CODE DATA`, `nsid`, or
/// `subnet V4 V6` (prefix lengths).
fn rule(kind: &Word, rest: &[&Word], errors: &mut Vec<ConfigError>) -> Option<EdnsRule> {
    let option = match (kind.text.to_lowercase().as_str(), rest) {
        ("local", [code, data]) => EdnsRule::Local {
            code: number(code, u64::from(u16::MAX), "an option code", errors)? as u16,
            data: local_data(data, errors)?,
        },
        ("nsid", []) => EdnsRule::Nsid,
        ("subnet", [v4, v6]) => {
            let (v4, v6) = (
                number(v4, 32, "an IPv4 prefix length (0..32)", errors),
                number(v6, 128, "an IPv6 prefix length (0..128)", errors),
            );
            EdnsRule::Subnet {
                v4: v4? as u8,
                v6: v6? as u8,
            }
        }
        (k @ ("local" | "nsid" | "subnet"), _) => {
            let want = match k {
                "local" => "exactly CODE and DATA",
                "nsid" => "no arguments",
                _ => "exactly IPv4 and IPv6 prefix lengths",
            };
            errors.push(ConfigError::new(
                &kind.pos,
                format!("rewrite: edns0 {k} rules take {want}"),
            ));
            return None;
        }
        (other, _) => return invalid_type(kind, other, errors),
    };
    Some(option)
}

/// `edns0 local unset CODE`, `edns0 nsid unset`, `edns0 subnet unset`
/// (no `revert`: there is nothing to put back).
fn unset(kind: &Word, rest: &[&Word], errors: &mut Vec<ConfigError>) -> Option<RuleKind> {
    let option = match (kind.text.to_lowercase().as_str(), rest) {
        ("local", [code]) => EdnsRule::Local {
            code: number(code, u64::from(u16::MAX), "an option code", errors)? as u16,
            data: EdnsData::Bytes(Vec::new()),
        },
        ("nsid", []) => EdnsRule::Nsid,
        ("subnet", []) => EdnsRule::Subnet { v4: 0, v6: 0 },
        (k @ ("local" | "nsid" | "subnet"), _) => {
            let want = if k == "local" { "exactly CODE" } else { "no arguments" };
            errors.push(ConfigError::new(
                &kind.pos,
                format!("rewrite: edns0 {k} unset takes {want} (and no revert)"),
            ));
            return None;
        }
        (other, _) => return invalid_type(kind, other, errors),
    };
    Some(RuleKind::Edns0 {
        action: EdnsAction::Unset,
        option,
        revert: false,
    })
}

/// A number written as Go's `strconv.ParseUint(s, 0, ...)` reads it.
fn number(w: &Word, max: u64, what: &str, errors: &mut Vec<ConfigError>) -> Option<u64> {
    let t = w.text.as_str();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse::<u64>().ok(),
    };
    match parsed.filter(|n| *n <= max) {
        Some(n) => Some(n),
        None => {
            errors.push(ConfigError::new(&w.pos, format!("rewrite: '{t}' is not {what}")));
            None
        }
    }
}

fn local_data(w: &Word, errors: &mut Vec<ConfigError>) -> Option<EdnsData> {
    let t = w.text.as_str();
    if t.starts_with('{') && t.ends_with('}') {
        return match t {
            "{qname}" => Some(EdnsData::Qname),
            "{qtype}" => Some(EdnsData::Qtype),
            "{client_ip}" => Some(EdnsData::ClientIp),
            "{client_port}" => Some(EdnsData::ClientPort),
            "{protocol}" => Some(EdnsData::Protocol),
            "{server_ip}" => Some(EdnsData::ServerIp),
            "{server_port}" => Some(EdnsData::ServerPort),
            other => match &other[1..other.len() - 1] {
                // a metadata label, as CoreDNS's metadata.IsLabel: "plugin/name"
                label if label.find('/').is_some_and(|p| p > 0 && p + 1 < label.len()) => {
                    Some(EdnsData::Metadata(label.to_string()))
                }
                _ => {
                    errors.push(ConfigError::new(
                        &w.pos,
                        format!("rewrite: unsupported variable '{other}' (supported: {{qname}}, {{qtype}}, {{client_ip}}, {{client_port}}, {{protocol}}, {{server_ip}}, {{server_port}}, {{PLUGIN/LABEL}} of metadata)"),
                    ));
                    None
                }
            },
        };
    }
    let Some(hex) = t.strip_prefix("0x") else {
        return Some(EdnsData::Bytes(t.as_bytes().to_vec()));
    };
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| hex.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
        .collect();
    match bytes {
        Some(b) => Some(EdnsData::Bytes(b)),
        None => {
            errors.push(ConfigError::new(&w.pos, format!("rewrite: '{t}' is not hex data")));
            None
        }
    }
}

/// An edns0 rule type other than `local`, `nsid` and `subnet`.
fn invalid_type<T>(kind: &Word, other: &str, errors: &mut Vec<ConfigError>) -> Option<T> {
    errors.push(ConfigError::new(
        &kind.pos,
        format!("rewrite: invalid edns0 rule type '{other}' (supported: local, nsid, subnet)"),
    ));
    None
}
