//! How `clusterdns check` prints `loadbalance`: every option with its value,
//! defaults written out, so the printout loads again to the same values.

use crate::corefile::words::{duration, Block};
use crate::query::reply::loadbalance::setup::LoadbalanceConfig;

pub(crate) fn loadbalance(b: &mut Block, lb: &LoadbalanceConfig) {
    if let Some(w) = &lb.weighted {
        let reload = format!("reload {}", duration(w.reload));
        b.directive(format!("loadbalance weighted {}", w.file.display()), &[reload]);
        return;
    }
    let prefer: Vec<String> = lb.prefer.iter().map(|n| format!("{}/{}", n.addr, n.len)).collect();
    let options: Vec<String> = (!prefer.is_empty())
        .then(|| format!("prefer {}", prefer.join(" ")))
        .into_iter()
        .collect();
    b.directive("loadbalance round_robin".into(), &options);
}
