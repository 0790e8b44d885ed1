//! The architecture's rules (DESIGN.md), checked on the real module graph
//! read from `src/` (`layout/graph.rs`: every `use` and `crate::`/`super::`
//! path, resolved to its module; test-only code left out):
//! - the query path and the watch path meet only at the store: neither
//!   module reaches into the other;
//! - no cycle between top-level modules (`metrics` is below `query`, not
//!   beside it);
//! - the query path's sockets, its log, memo and request parser are in no
//!   cycle among `query`'s children.
//!
//! Each rule is also run on a small synthetic tree that breaks it, so a
//! rule that cannot fail fails here.

#[path = "layout/graph.rs"]
mod graph;

use std::path::Path;

use graph::{cycles, Graph, Module};

fn m(path: &str) -> Module {
    path.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// Every broken rule of `g`, as one message per finding.
fn violations(g: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for (from, to) in [("query", "watch"), ("watch", "query")] {
        for edge in g.reaches(&m(from), &m(to)) {
            out.push(format!("{from} must not use {to}: {edge}"));
        }
    }
    for cycle in cycles(&g.children_edges(&[])) {
        out.push(format!("cycle between top-level modules: {cycle:#?}"));
    }
    let query = m("query");
    let acyclic = ["udp", "tcp", "log", "memo", "request"];
    for cycle in cycles(&g.children_edges(&query)) {
        if let Some(name) = acyclic
            .iter()
            .find(|n| cycle.iter().any(|e| e.contains(&format!("crate::query::{n} "))))
        {
            out.push(format!("query::{name} is in a cycle: {cycle:#?}"));
        }
    }
    out
}

fn source() -> Graph {
    Graph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn the_crate_keeps_the_architecture() {
    let g = source();
    for module in ["query", "watch", "store", "metrics", "query::udp", "query::tcp"] {
        assert!(
            g.modules.contains(&m(module)),
            "no module {module}: the graph did not read src/"
        );
    }
    assert!(
        g.edges.contains_key(&(m("query::tcp"), m("query::defer"))),
        "the graph misses tcp → defer"
    );
    let found = violations(&g);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A small crate that breaks every rule once.
fn broken() -> Vec<(String, String)> {
    let file = |path: &str, text: &str| (path.to_string(), text.to_string());
    vec![
        file("lib.rs", "pub mod metrics;\npub mod query;\npub mod store;\npub mod watch;\n"),
        file("store.rs", "pub struct Snapshot;\n"),
        file("metrics/mod.rs", "mod zone;\npub fn dropped() -> u64 { crate::query::log::count() }\n"),
        file("metrics/zone.rs", "use crate::store::Snapshot;\n"),
        file(
            "query/mod.rs",
            "pub mod defer;\npub mod log;\npub mod tcp;\n// crate::watch in a comment is no edge\nconst S: &str = \"crate::watch::x\";\n",
        ),
        file("query/log.rs", "use crate::metrics::{self, dropped};\npub fn count() -> u64 { 0 }\n"),
        file("query/defer.rs", "pub enum Sink { Tcp(super::tcp::Pending) }\n"),
        file(
            "query/tcp.rs",
            "use super::{defer::Sink, log};\npub struct Pending;\n#[cfg(test)]\nmod tests {\n    use crate::watch::Lister;\n}\n",
        ),
        file("watch/mod.rs", "pub struct Lister;\nfn f() { let _ = crate::query::tcp::Pending; }\n"),
    ]
}

#[test]
fn each_rule_fails_on_a_tree_that_breaks_it() {
    let g = Graph::from_files(&broken());
    let found = violations(&g);
    let has = |needle: &str| found.iter().any(|f| f.contains(needle));
    assert!(
        has("watch must not use query: crate::watch -> crate::query::tcp (src/watch/mod.rs:2)"),
        "{found:#?}"
    );
    assert!(has("cycle between top-level modules"), "{found:#?}");
    assert!(has("query::tcp is in a cycle"), "{found:#?}");
    // comments, strings and test modules are no edges
    assert!(!has("query must not use watch"), "{found:#?}");
    assert!(g.edges.contains_key(&(m("metrics::zone"), m("store"))));
    assert!(g.edges.contains_key(&(m("query::tcp"), m("query::log"))));
}

#[test]
fn the_rules_pass_once_the_tree_is_mended() {
    let mended: Vec<(String, String)> = broken()
        .into_iter()
        .map(|(path, text)| {
            let text = match path.as_str() {
                "metrics/mod.rs" => "mod zone;\n".to_string(),
                "query/defer.rs" => "pub enum Sink { Tcp(Pending) }\npub struct Pending;\n".to_string(),
                "query/tcp.rs" => "use super::defer::{Pending, Sink};\n".to_string(),
                "watch/mod.rs" => "pub struct Lister;\nuse crate::store::Snapshot;\n".to_string(),
                _ => text,
            };
            (path, text)
        })
        .collect();
    let found = violations(&Graph::from_files(&mended));
    assert!(found.is_empty(), "{found:#?}");
}
