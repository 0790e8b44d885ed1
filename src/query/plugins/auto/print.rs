//! How `clusterdns check` prints `auto`: its zones, the directory with
//! the pattern and template (defaults written out), and `reload`.

use crate::corefile::words::{duration, names, quote, with, Block};
use crate::query::plugins::auto::setup::AutoConfig;

pub(crate) fn auto(b: &mut Block, a: &AutoConfig) {
    let template = a.template.replace("${", "{");
    let options = vec![
        format!(
            "directory {} {} {}",
            quote(&a.directory.display().to_string()),
            quote(a.regex.as_str()),
            quote(&template)
        ),
        format!("reload {}", duration(a.reload)),
    ];
    b.directive(with("auto", &names(&a.zones)), &options);
}
