//! `any`, CoreDNS's plugin for RFC 8482: an ANY question gets one HINFO
//! record (`"ANY obsoleted" "See RFC 8482"`) instead of every record the
//! name has; other questions pass. It takes no arguments and runs early,
//! before `rewrite` and the guard, on the question as asked, and is asked
//! again on the question as it reaches the block's data (a rewritten one,
//! a search name, one asked on behalf of another block). The answer keeps
//! the writer the query already had (the plugin names none) and may be
//! memoized.

use std::sync::Arc;

use hickory_proto::op::Query;
use hickory_proto::rr::{Name, RecordType};

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::problem::ConfigError;
use crate::corefile::words::Block;
use crate::metrics::Plugin;
use crate::query::plugins::chain::{Answering, Client, Setup, Stage};
use crate::query::plugins::verdict::Verdict;
use crate::query::reply::{self, Answer};

/// `any`, as a server block holds it and as the router runs it.
#[derive(Debug)]
pub struct Any;

/// Reads `any` (no arguments).
pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> Arc<dyn Setup> {
    Args::from(d).count(0, 0, errors);
    Arc::new(Any)
}

impl Setup for Any {
    fn name(&self) -> &'static str {
        "any"
    }

    fn build(&self, _: &str) -> Box<dyn Answering> {
        Box::new(Any)
    }

    fn print(&self, b: &mut Block) {
        b.line(1, "any");
    }
}

impl Answering for Any {
    fn stage(&self) -> Stage {
        Stage::Early
    }

    fn plugin(&self) -> Plugin {
        Plugin::None
    }

    fn answer(&self, query: &Query, _: &Client, out: &mut Answer) -> Verdict {
        if query.query_type() != RecordType::ANY {
            return Verdict::Next;
        }
        out.answers.push(reply::hinfo_rfc8482(query.name()));
        out.tags.memoizable = true;
        Verdict::Answered
    }

    /// The writer stays the one the query had: the metrics count the
    /// answer as before it.
    fn writer(&self, out: &Answer) -> Plugin {
        out.tags.plugin
    }

    fn passes_address(&self, _: &Name) -> bool {
        true
    }

    fn asks_again(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::plugins::chain::{Chain, Outcome};

    fn ask(chain: &Chain, again: bool, qtype: RecordType, out: &mut Answer) -> Outcome {
        let query = Query::query(Name::from_ascii("example.org.").expect("name"), qtype);
        if again {
            chain.run_again(&query, &Client::ANY, out)
        } else {
            Chain::run(&chain.early, &query, &Client::ANY, out)
        }
    }

    #[test]
    fn an_any_question_gets_one_hinfo_and_keeps_its_writer() {
        let setup: Arc<dyn Setup> = Arc::new(Any);
        let chain = Chain::build([&setup], "dns://:53");
        assert_eq!(chain.early.len(), 1);
        for again in [false, true] {
            let mut out = Answer::default();
            out.tags.plugin = Plugin::Kubernetes;
            assert_eq!(ask(&chain, again, RecordType::ANY, &mut out), Outcome::Answered);
            let answers: Vec<String> = out.answers.iter().map(|r| r.to_string()).collect();
            assert_eq!(answers, ["example.org. 8482 IN HINFO ANY obsoleted See RFC 8482"]);
            assert!(out.tags.memoizable);
            assert_eq!(out.tags.plugin, Plugin::Kubernetes);

            let mut out = Answer::default();
            assert_eq!(ask(&chain, again, RecordType::A, &mut out), Outcome::Passed);
            assert!(out.answers.is_empty());
        }
    }

    #[test]
    fn it_takes_no_arguments_and_prints_its_name() {
        let mut b = Block(String::new());
        Any.print(&mut b);
        assert_eq!(b.0, "    any\n");
        assert!(Any.passes_address(&Name::root()));
    }
}
