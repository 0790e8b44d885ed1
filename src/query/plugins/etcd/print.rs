//! How `clusterdns check` prints `etcd`: its zones and every option with
//! its default written out (the password shown as `[hidden]`).

use super::setup::EtcdConfig;
use crate::corefile::words::{names, quote, with, Block};

pub(crate) fn etcd(b: &mut Block, cfg: &EtcdConfig) {
    let mut options = vec![
        format!("path {}", quote(&cfg.path)),
        format!("endpoint {}", cfg.endpoints.join(" ")),
        format!("min-lease-ttl {}", cfg.min_lease_ttl),
        format!("max-lease-ttl {}", cfg.max_lease_ttl),
    ];
    if let Some(zones) = &cfg.fallthrough {
        options.push(with("fallthrough", &names(zones)));
    }
    if let Some((user, _)) = &cfg.credentials {
        options.push(format!("credentials {} [hidden]", quote(user)));
    }
    if let Some(files) = &cfg.tls {
        let files: Vec<String> = files.iter().map(|f| quote(&f.display().to_string())).collect();
        options.push(with("tls", &files.join(" ")));
    }
    b.directive(with("etcd", &names(&cfg.zones)), &options);
}
