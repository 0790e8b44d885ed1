//! What later CoreDNS releases made a default in kubeadm's Corefile, added
//! where a Corefile that needed migrating lacks it (as kubeadm's
//! corefile-migration does on an upgrade), and one `forward` per server
//! block:
//!
//! | missing                            | added                      | since CoreDNS |
//! |------------------------------------|----------------------------|---------------|
//! | `loop` in a block that forwards    | `loop`                     | 1.2.1         |
//! | `ready` in a block with kubernetes | `ready`                    | 1.5.0         |
//! | `lameduck` in `health`             | `lameduck 5s`              | 1.6.5         |
//! | `max_concurrent` in `forward`      | `max_concurrent 1000`      | 1.7.0         |
//!
//! A block left with several `forward` lines (several `proxy FROM` were
//! allowed, CoreDNS 1.5.0 takes one forward a block) keeps `forward .`;
//! each other one moves to a server block of its own for its zone, with
//! `errors`, `cache 30` and `loop`, as kubeadm writes a stub domain.

use super::doc::{word, Block, Doc, Item, Top};
use crate::corefile::problem::ConfigError;

/// The zone of a server block key: `dns://example.org:53` → `example.org`.
pub fn zone_of(key: &str) -> &str {
    let key = key.split_once("://").map_or(key, |(_, rest)| rest);
    match key.rsplit_once(':') {
        Some((zone, port)) if port.chars().all(|c| c.is_ascii_digit()) => zone,
        _ => key,
    }
}

/// The port of a key, when it names one.
fn port_of(key: &str) -> Option<&str> {
    let (_, port) = key.rsplit_once(':')?;
    (!port.is_empty() && port.chars().all(|c| c.is_ascii_digit())).then_some(port)
}

/// Moves all but one `forward` of each block into blocks of their own.
pub fn split_forwards(doc: &mut Doc, errors: &mut Vec<ConfigError>) {
    let mut new_blocks = Vec::new();
    for top in &mut doc.tops {
        let Top::Block(b) = top else { continue };
        let forwards = b.items.iter().filter(|i| !i.gone && i.name.text == "forward").count();
        if forwards < 2 {
            continue;
        }
        let mut roots = b
            .items
            .iter()
            .filter(|i| !i.gone && i.name.text == "forward" && i.args.first().is_some_and(|a| a.text == "."));
        if let Some(second) = roots.nth(1) {
            errors.push(ConfigError::new(
                &second.name.pos,
                "cannot migrate: a second `forward .` in one server block",
            ));
            b.items
                .iter_mut()
                .filter(|i| i.name.text == "forward")
                .for_each(|i| i.gone = true);
            continue;
        }
        let keys: Vec<String> = b.keys.iter().map(|k| k.text.clone()).collect();
        for item in &mut b.items {
            let from = item.args.first().map(|a| a.text.clone()).unwrap_or_default();
            if item.gone || item.name.text != "forward" || from == "." || from.is_empty() {
                continue;
            }
            new_blocks.push(stub_block(item, &from, &keys));
        }
    }
    doc.tops.extend(new_blocks.into_iter().map(Top::Block));
}

fn stub_block(item: &mut Item, from: &str, keys: &[String]) -> Block {
    let mut ports: Vec<&str> = keys.iter().filter_map(|k| port_of(k)).collect();
    ports.dedup();
    let new_keys: Vec<String> = if ports.is_empty() {
        vec![from.to_string()]
    } else {
        ports.iter().map(|p| format!("{from}:{p}")).collect()
    };
    let text = item.text();
    let at = item.name.pos.clone();
    let mut fwd = item.clone();
    fwd.notes.clear();
    fwd.args[0] = word(&at, ".");
    item.remove(format!(
        "moved `{text}` to a server block of its own, `{}`, below: CoreDNS 1.5.0 takes one forward a block",
        new_keys.join(" ")
    ));
    let mut items = vec![
        Item::new(&at, "errors", &[]),
        Item::new(&at, "cache", &["30"]),
        Item::new(&at, "loop", &[]),
        fwd,
    ];
    items.iter_mut().for_each(|i| i.added = true);
    Block {
        keys: new_keys.iter().map(|k| word(&at, k)).collect(),
        items,
        close_line: 0,
        notes: vec![format!(
            "`{text}` from the `{}` block, with `errors`, `cache 30` and `loop` as kubeadm writes a stub domain",
            keys.join(" ")
        )],
    }
}

/// Adds the defaults of the table above to every server block.
pub fn add(doc: &mut Doc) {
    for top in &mut doc.tops {
        let Top::Block(b) = top else { continue };
        if b.keys.iter().any(|k| k.text.starts_with('(')) {
            continue;
        }
        block(b);
    }
}

fn has(b: &Block, name: &str) -> bool {
    b.items.iter().any(|i| !i.gone && i.name.text == name)
}

fn block(b: &mut Block) {
    for item in b.items.iter_mut().filter(|i| !i.gone) {
        match item.name.text.as_str() {
            "health" => option(
                item,
                "lameduck",
                &["5s"],
                "added `lameduck 5s` to `health`: a CoreDNS 1.6.5 default; /health fails for 5s before shutdown",
            ),
            "forward" => option(
                item,
                "max_concurrent",
                &["1000"],
                "added `max_concurrent 1000` to `forward`: a CoreDNS 1.7.0 default; bounds the queries in flight upstream",
            ),
            _ => {}
        }
    }
    if has(b, "kubernetes") && !has(b, "ready") {
        if let Some(at) = b.items.iter().position(|i| !i.gone && i.name.text == "kubernetes") {
            let mut ready = Item::new(&b.items[at].name.pos, "ready", &[]);
            ready
                .notes
                .push("added `ready`: a CoreDNS 1.5.0 default; kubeadm's readinessProbe reads :8181/ready".into());
            b.items.insert(at, ready);
        }
    }
    if has(b, "forward") && !has(b, "loop") {
        if let Some(last) = b.items.iter().rev().find(|i| !i.gone) {
            let mut lp = Item::new(&last.name.pos, "loop", &[]);
            lp.notes.push(
                "added `loop`: a CoreDNS 1.2.1 default where a block forwards; stops on a forwarding loop".into(),
            );
            b.items.push(lp);
        }
    }
}

/// Adds option `name ARGS` to `item` unless it has one.
fn option(item: &mut Item, name: &str, args: &[&str], note: &str) {
    if item.live_options().any(|o| o.name.text == name) {
        return;
    }
    let at = item.name.pos.clone();
    let mut o = Item::new(&at, name, args);
    o.notes.push(note.to_string());
    item.options.get_or_insert_with(Vec::new).push(o);
}
