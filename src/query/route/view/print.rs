//! How `clusterdns check` prints `view`: its name and every condition,
//! each as written (quoted when it must be), so the printout loads again.

use crate::corefile::words::{quote, Block};
use crate::query::route::view::setup::ViewConfig;

/// `view NAME { expr ... }`, or nothing without a view.
pub(crate) fn view(b: &mut Block, view: Option<&ViewConfig>) {
    if let Some(v) = view {
        let exprs: Vec<String> = v.exprs.iter().map(|p| format!("expr {}", quote(&p.source))).collect();
        b.directive(format!("view {}", quote(&v.name)), &exprs);
    }
}
