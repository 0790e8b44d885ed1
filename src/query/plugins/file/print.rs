//! How `clusterdns check` prints `file`: every option with its value,
//! defaults written out, so the printout loads again to the same values.

use crate::corefile::words::{duration, names, with, Block};
use crate::query::plugins::file::setup::FileConfig;

pub(crate) fn file(b: &mut Block, z: &FileConfig) {
    let head = with(&format!("file {}", z.path.display()), &names(&z.zones));
    let mut options = vec![format!("reload {}", duration(z.reload))];
    options.extend(z.reload_by_mtime.then(|| "reload_by_mtime".to_string()));
    options.extend(z.fallthrough.as_ref().map(|f| with("fallthrough", &names(f))));
    b.directive(head, &options);
}
