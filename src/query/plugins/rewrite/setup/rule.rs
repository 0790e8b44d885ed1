//! What a `rewrite` rule is, once parsed: the types `config/rewrite.rs`
//! (the directive) and `config/rewrite_edns.rs` (its `edns0` rules) build
//! and the `rewrite` plugin (`query/plugins/rewrite.rs`) applies.

use hickory_proto::rr::{DNSClass, RecordType};

/// One rule, in directive order.
#[derive(Debug, Clone)]
pub struct RewriteRule {
    /// `stop`: no later rule runs once this one applied.
    pub stop: bool,
    pub kind: RuleKind,
}

#[derive(Debug, Clone)]
pub enum RuleKind {
    /// `auto`: answer names and values that are the rewritten name (or
    /// below it) become the asked name again.
    Name {
        matcher: Matcher,
        to: String,
        auto: bool,
        answers: Vec<AnswerRule>,
    },
    Type {
        from: RecordType,
        to: RecordType,
    },
    Class {
        from: DNSClass,
        to: DNSClass,
    },
    Ttl {
        matcher: Matcher,
        min: u32,
        max: u32,
    },
    /// CNAME targets matching become `to`, whose records replace theirs.
    Cname {
        matcher: Matcher,
        to: String,
    },
    /// The reply's rcode `from` becomes `to` for matching names.
    Rcode {
        matcher: Matcher,
        from: hickory_proto::op::ResponseCode,
        to: hickory_proto::op::ResponseCode,
    },
    /// `revert`: the reply carries no trace of the change (clusterdns's
    /// replies never echo the request's options, so it always holds).
    Edns0 {
        action: EdnsAction,
        option: EdnsRule,
        revert: bool,
    },
}

/// How a name is matched (FROM) and what replaces it (TO).
#[derive(Debug, Clone)]
pub enum Matcher {
    Exact(String),
    Prefix(String),
    Suffix(String),
    Substring(String),
    Regex(regex::Regex),
}

/// `answer name|value FROM TO`: a regex over answer owner names or values.
#[derive(Debug, Clone)]
pub struct AnswerRule {
    pub value: bool,
    pub pattern: regex::Regex,
    pub to: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdnsAction {
    /// Remove the option (`unset`).
    Unset,
    /// Change the option if present, else add it.
    Set,
    /// Change the option only if present.
    Replace,
    /// Add the option only if absent.
    Append,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EdnsRule {
    Local { code: u16, data: EdnsData },
    Nsid,
    Subnet { v4: u8, v6: u8 },
}

/// What an EDNS0 local option carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EdnsData {
    Bytes(Vec<u8>),
    Qname,
    Qtype,
    ClientIp,
    ClientPort,
    Protocol,
    /// The address the query came in on (the listener's socket).
    ServerIp,
    ServerPort,
    /// A metadata label (`{plugin/name}`): its value from the block's
    /// `metadata`; unset or empty, the option is not set (as in CoreDNS).
    Metadata(String),
}
