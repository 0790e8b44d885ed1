//! The renames and removals of CoreDNS 1.2 → 1.14 that a Corefile written
//! for an older CoreDNS needs, the rules kubeadm's corefile-migration
//! applies (its `migration/plugins.go` and `versions.go`), each change with
//! its note:
//!
//! | in the input                          | becomes                          | since CoreDNS |
//! |---------------------------------------|----------------------------------|---------------|
//! | `proxy FROM TO...`                    | `forward FROM TO...`             | 1.4 / 1.5     |
//! | proxy `fail_timeout`, `max_fails`, `health_check`, `spray` | removed     | 1.5           |
//! | proxy `protocol dns [force_tcp]`      | removed / `force_tcp`            | 1.5           |
//! | proxy `protocol https_google ...`     | removed                          | 1.2.1         |
//! | proxy `policy first` / `least_conn`   | `policy sequential` / removed    | 1.5           |
//! | kubernetes `upstream`, `resyncperiod` | removed                          | 1.4–1.7       |
//! | kubernetes `endpoint A B...`          | `endpoint A`                     | 1.4           |
//! | kubernetes `transfer to ADDR...`      | `transfer ZONE { to ADDR... }`   | 1.8           |
//! | `federation`                          | removed                          | 1.7           |
//!
//! What cannot be carried over (proxy's `grpc` protocol, an option proxy
//! had and forward has not) is an error at its place.

use super::doc::{Block, Doc, Item, Top};
use crate::corefile::problem::ConfigError;

/// Applies the table above to every server block of `doc`.
pub fn rewrite(doc: &mut Doc, errors: &mut Vec<ConfigError>) {
    for top in &mut doc.tops {
        if let Top::Block(b) = top {
            block(b, errors);
        }
    }
}

fn block(b: &mut Block, errors: &mut Vec<ConfigError>) {
    let mut added = Vec::new();
    for (i, item) in b.items.iter_mut().enumerate() {
        match item.name.text.as_str() {
            "proxy" => proxy(item, errors),
            "kubernetes" => {
                let zone = item
                    .args
                    .first()
                    .map(|a| a.text.clone())
                    .or_else(|| b.keys.first().map(|k| super::defaults::zone_of(&k.text).to_string()));
                if let Some(t) = kubernetes(item, zone.as_deref().unwrap_or("."), errors) {
                    added.push((i + 1, t));
                }
            }
            "federation" => item.remove(
                "removed `federation`: CoreDNS 1.7.0 removed it with Kubernetes Federation v1 (kubefed), \
                 and clusterdns has none; names under a federation now answer NXDOMAIN"
                    .into(),
            ),
            _ => {}
        }
    }
    for (at, item) in added.into_iter().rev() {
        b.items.insert(at, item);
    }
}

fn proxy(item: &mut Item, errors: &mut Vec<ConfigError>) {
    item.notes
        .push("`proxy` is now `forward`: CoreDNS 1.4.0 deprecated proxy and 1.5.0 removed it".into());
    item.name.text = "forward".into();
    for o in item.options.iter_mut().flatten() {
        proxy_option(o, errors);
    }
}

fn proxy_option(o: &mut Item, errors: &mut Vec<ConfigError>) {
    let text = o.text();
    let first = o.args.first().map(|a| a.text.clone()).unwrap_or_default();
    match (o.name.text.as_str(), first.as_str()) {
        ("except", _) | ("policy", "random" | "round_robin") => {}
        ("fail_timeout" | "max_fails" | "health_check" | "spray", _) => o.remove(format!(
            "removed `{text}`: a proxy option forward does not have (forward checks its upstreams itself)"
        )),
        ("policy", "first") => {
            o.args[0].text = "sequential".into();
            o.notes.push("`policy first` is `policy sequential` in forward".into());
        }
        ("policy", "least_conn") => {
            o.remove("removed `policy least_conn`: forward has no such policy and uses its default, random".into())
        }
        ("protocol", "dns" | "force_tcp") if o.args.iter().any(|a| a.text == "force_tcp") => {
            o.notes.push(format!("`{text}` is `force_tcp` in forward"));
            o.name.text = "force_tcp".into();
            o.args.clear();
        }
        ("protocol", "dns") => o.remove(format!("removed `{text}`: plain DNS is forward's default")),
        ("protocol", "https_google") => o.remove(format!(
            "removed `{text}`: CoreDNS 1.2.1 dropped Google's HTTPS JSON API; the upstreams are now asked in plain DNS"
        )),
        _ => {
            errors.push(ConfigError::new(
                &o.name.pos,
                format!("cannot migrate proxy option `{text}`: forward has no equivalent"),
            ));
            o.gone = true;
        }
    }
}

/// Rewrites the options; returns the `transfer` directive to add after it.
fn kubernetes(item: &mut Item, zone: &str, errors: &mut Vec<ConfigError>) -> Option<Item> {
    let mut transfer = None;
    for o in item.options.iter_mut().flatten() {
        let text = o.text();
        match o.name.text.as_str() {
            "upstream" => o.remove(format!(
                "removed `{text}`: CoreDNS 1.4.0 deprecated it and 1.7.0 removed it; \
                 external names are resolved through this server's own chain"
            )),
            "resyncperiod" => o.remove(format!(
                "removed `{text}`: CoreDNS 1.5.0 deprecated it and 1.7.0 removed it; \
                 the watches keep the cache current (clusterdns's `resync` relists on a timer if wanted)"
            )),
            "endpoint" if o.args.len() > 1 => {
                o.notes.push(format!(
                    "kept only the first of `{text}`: CoreDNS 1.4.0 stopped using the others"
                ));
                o.args.truncate(1);
            }
            "transfer" => transfer = Some(kubernetes_transfer(o, zone, errors)?),
            _ => {}
        }
    }
    transfer
}

/// `transfer to ADDR...` inside `kubernetes` → its own `transfer` directive.
fn kubernetes_transfer(o: &mut Item, zone: &str, errors: &mut Vec<ConfigError>) -> Option<Item> {
    if o.args.first().is_none_or(|a| a.text != "to") || o.args.len() < 2 {
        errors.push(ConfigError::new(
            &o.name.pos,
            format!("cannot migrate `{}`: expected `transfer to ADDRESS...`", o.text()),
        ));
        o.gone = true;
        return None;
    }
    let text = o.text();
    o.remove(format!("moved `{text}` to a `transfer` directive below"));
    let mut t = Item::new(&o.name.pos, "transfer", &[zone]);
    t.notes.push(format!(
        "`transfer {zone}` from kubernetes' `{text}`: CoreDNS 1.8.0 moved zone transfers to the transfer plugin"
    ));
    let mut to = Item::new(&o.name.pos, "to", &[]);
    to.args = o.args[1..].to_vec();
    t.options = Some(vec![to]);
    Some(t)
}
