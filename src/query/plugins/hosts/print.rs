//! How `clusterdns check` prints `hosts`: every option with its value,
//! defaults written out, so the printout loads again to the same values.

use crate::corefile::words::{duration, names, with, Block};
use crate::query::plugins::hosts::setup::HostsConfig;

pub(crate) fn hosts(b: &mut Block, h: &HostsConfig) {
    let file = h.file.as_ref().map_or(String::new(), |p| p.display().to_string());
    let mut options: Vec<String> = h.inline.iter().map(|(ip, n)| format!("{ip} {}", names(n))).collect();
    options.push(format!("ttl {}", h.ttl));
    options.extend(h.no_reverse.then(|| "no_reverse".to_string()));
    options.push(format!("reload {}", duration(h.reload)));
    options.extend(h.fallthrough.as_ref().map(|z| with("fallthrough", &names(z))));
    options.extend(h.fallthrough_unsupported.then(|| "fallthrough_unsupported".to_string()));
    b.directive(with("hosts", format!("{file} {}", names(&h.zones)).trim()), &options);
}
