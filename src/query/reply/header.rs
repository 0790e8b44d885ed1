//! `header` (CoreDNS's plugin/header): header flags set or cleared in the
//! query the plugins after it see (`query set|clear FLAG...`) and in the
//! response the client gets (`response set|clear FLAG...`), rules taken in
//! the order written, so the last one naming a flag wins. Flags: `aa`,
//! `ra`, `rd` (CoreDNS's), and `ad`, `cd`, `qr`.
//!
//! It runs where CoreDNS's plugin order puts it, after `cache`: the
//! router notes the block's rules on an answer once the plugins that run
//! before it (the chain's early plugins, a refusing guard) have passed
//! (`Tags::header`, carried to the forwarding task by the `Continuation`).
//! The query rules change what the reply echoes of the request (RD, CD,
//! and whether AD was asked for) and the header of a forwarded request;
//! the response rules change the reply's header last ([`patch`], called by
//! the one reply writer). A block with `header` takes none of the short
//! ways (the memo, cache-hit replays, the cluster zone's direct writer),
//! which echo RD and CD from the request.

use crate::query::reply::echo::Echo;

pub mod print;
pub mod rules;
pub mod setup;

pub use rules::{apply, Flag, Rule, Rules, FLAGS};

fn word(bytes: &[u8]) -> Option<u16> {
    Some(u16::from_be_bytes([*bytes.get(2)?, *bytes.get(3)?]))
}

fn put(bytes: &mut [u8], word: u16) {
    bytes[2..4].copy_from_slice(&word.to_be_bytes());
}

/// The query rules on a request's bytes (the one forwarded upstream).
pub fn request(rules: &Rules, bytes: &mut [u8]) {
    if let Some(w) = word(bytes).filter(|_| !rules.query.is_empty()) {
        put(bytes, apply(&rules.query, w));
    }
}

/// The block's rules (the answer's `Tags::header`) on a reply written
/// into `out` for `echo`: RD and CD echoed, and AD given (`authentic`: the
/// answer's AD), as the query rules left the request; then the response
/// rules.
pub fn patch(out: &mut [u8], echo: &Echo<'_>, rules: Option<&Rules>, authentic: bool) {
    let Some(rules) = rules else { return };
    let Some(mut w) = word(out) else { return };
    let meta = echo.meta;
    let bit = |on: bool, flag: Flag| if on { flag as u16 } else { 0 };
    let asked = bit(meta.recursion_desired, Flag::Rd)
        | bit(meta.checking_disabled, Flag::Cd)
        | bit(meta.authentic_data, Flag::Ad);
    let asked = apply(&rules.query, asked);
    let echoed = Flag::Rd as u16 | Flag::Cd as u16;
    w = (w & !echoed) | (asked & echoed);
    let ad_asked = asked & Flag::Ad as u16 != 0 || echo.edns.is_some_and(|e| e.dnssec_ok);
    w = (w & !(Flag::Ad as u16)) | bit(authentic && ad_asked, Flag::Ad);
    put(out, apply(&rules.response, w));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::reply::Answer;

    fn rule(flag: Flag, set: bool) -> Rule {
        Rule { flag, set }
    }

    /// CoreDNS's TestHeaderResponseRules and TestHeaderQueryRules, on the
    /// flags word; the last rule naming a flag wins.
    #[test]
    fn rules_set_and_clear_in_order() {
        assert_eq!(apply(&[rule(Flag::Ra, true)], 0), 0x0080);
        assert_eq!(apply(&[rule(Flag::Ra, false)], 0x0080), 0);
        assert_eq!(apply(&[rule(Flag::Rd, true)], 0), 0x0100);
        assert_eq!(apply(&[rule(Flag::Aa, true)], 0), 0x0400);
        let both = [rule(Flag::Aa, true), rule(Flag::Aa, false), rule(Flag::Cd, true)];
        assert_eq!(apply(&both, 0x0400), 0x0010);
    }

    #[test]
    fn a_reply_echoes_the_request_as_the_query_rules_left_it() {
        let mut meta = hickory_proto::op::Metadata::new(
            7,
            hickory_proto::op::MessageType::Query,
            hickory_proto::op::OpCode::Query,
        );
        meta.recursion_desired = true;
        let echo = Echo {
            meta: &meta,
            query: None,
            edns: None,
        };
        let mut answer = Answer::default();
        answer.tags.header = Some(std::sync::Arc::new(Rules {
            query: vec![rule(Flag::Rd, false), rule(Flag::Cd, true)],
            response: vec![rule(Flag::Ra, true), rule(Flag::Aa, true)],
        }));
        let mut out = vec![0, 7, 0x81, 0x00, 0, 0, 0, 0, 0, 0, 0, 0];
        patch(&mut out, &echo, answer.tags.header.as_deref(), false);
        assert_eq!(out[2..4], [0x84, 0x90]); // QR AA, RA CD; RD gone
        let mut sent = vec![0, 7, 0x01, 0x00];
        request(answer.tags.header.as_deref().expect("rules"), &mut sent);
        assert_eq!(sent[2..4], [0x00, 0x10]);
    }
}
