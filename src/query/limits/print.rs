//! How `clusterdns check` prints `timeouts` and `limits`: every option with its value,
//! defaults written out, so the printout loads again to the same values.

use crate::corefile::words::{duration, Block};
use crate::query::limits::timeouts::TcpLimits;

pub(crate) fn timeouts(b: &mut Block, t: &TcpLimits) {
    let options = [
        format!("read {}", duration(t.read)),
        format!("write {}", duration(t.write)),
        format!("idle {}", duration(t.idle)),
        format!(
            "maxtcpqueries {}",
            if t.max_queries == 0 { -1 } else { t.max_queries as i64 }
        ),
    ];
    b.directive("timeouts".into(), &options);
}

pub(crate) fn limits(b: &mut Block, t: &TcpLimits, in_flight: Option<usize>) {
    let mut options = vec![
        format!("connections {}", t.connections),
        format!("pipeline {}", t.pipeline),
    ];
    options.extend(in_flight.map(|n| format!("in_flight {n}")));
    options.push(format!("client_share {}", t.client_share));
    options.push(format!("limited_clients {}", t.limited_clients));
    b.directive("limits".into(), &options);
}
