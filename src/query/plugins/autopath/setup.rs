//! `autopath [ZONES...] RESOLV-CONF|@kubernetes`: the search path walked
//! on the server's side for a pod's first question.

use std::path::{Path, PathBuf};

use hickory_proto::rr::Name;

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::problem::ConfigError;

/// `autopath [ZONES...] RESOLV-CONF|@kubernetes`.
#[derive(Debug, Clone)]
pub struct AutopathConfig {
    /// Empty: the block's zones.
    pub zones: Vec<Name>,
    /// Search domains after the pod's own (`<ns>.svc.<zone> svc.<zone> <zone>`):
    /// a RESOLV-CONF file's `search` list; none for `@kubernetes`.
    pub search: Vec<Name>,
    /// The RESOLV-CONF file; `None` for `@kubernetes`.
    pub resolv: Option<PathBuf>,
}

/// Parses one `autopath` directive.
pub fn autopath(d: &Directive, dir: &Path, errors: &mut Vec<ConfigError>) -> Option<AutopathConfig> {
    let a = Args::from(d);
    if !a.count(1, usize::MAX, errors) {
        return None;
    }
    let (last, zones) = d.args.split_last()?;
    let zones = crate::corefile::args::zones(zones, errors);
    let resolv = (!last.text.starts_with('@')).then(|| dir.join(&last.text));
    let search = if last.text == "@kubernetes" {
        Vec::new()
    } else if last.text.starts_with('@') {
        errors.push(ConfigError::new(
            &last.pos,
            format!(
                "autopath: '{}' is not a plugin with a search path (supported: @kubernetes)",
                last.text
            ),
        ));
        return None;
    } else {
        let path = dir.join(&last.text);
        match std::fs::read_to_string(&path) {
            Ok(text) => text
                .lines()
                .filter_map(|l| l.strip_prefix("search"))
                .flat_map(str::split_whitespace)
                .filter_map(|d| {
                    Name::from_ascii(d).ok().map(|mut n| {
                        n.set_fqdn(true);
                        n.to_lowercase()
                    })
                })
                .collect(),
            Err(e) => {
                errors.push(ConfigError::new(
                    &last.pos,
                    format!("autopath: cannot read {}: {e}", path.display()),
                ));
                return None;
            }
        }
    };
    Some(AutopathConfig { zones, search, resolv })
}
