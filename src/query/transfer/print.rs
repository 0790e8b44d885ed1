//! How `clusterdns check` prints `transfer`: every option with its value,
//! defaults written out, so the printout loads again to the same values.

use crate::corefile::words::{names, with, Block};

/// `transfer ZONES { to ...; source ... }`, every `to` address on one line.
pub(crate) fn transfer(b: &mut Block, t: &crate::query::transfer::setup::TransferConfig) {
    use crate::query::transfer::setup::To;
    let to: Vec<String> =
        t.to.iter()
            .map(|to| match to {
                To::Any => "*".to_string(),
                To::Addr(a) => a.to_string(),
            })
            .collect();
    let mut options = vec![format!("to {}", to.join(" "))];
    options.extend(t.source.map(|s| format!("source {s}")));
    b.directive(with("transfer", &names(&t.zones)), &options);
}
