//! What a generator running in a pod reads from its cluster: the Services
//! (names only, listed through the API with a read-only service account,
//! or `$KUBECONFIG` outside a cluster), the DNS server its pods use (the
//! first `nameserver` of `/etc/resolv.conf`) and who it is (host, node).

use std::net::{IpAddr, SocketAddr};

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, ListParams};

/// `(namespace, name)` of every Service the API lists, 500 per page.
pub async fn services() -> Result<Vec<(String, String)>, String> {
    let client = kube::Client::try_default()
        .await
        .map_err(|e| format!("Kubernetes API (in-cluster service account or $KUBECONFIG): {e}"))?;
    let api: Api<Service> = Api::all(client);
    let mut out = Vec::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api
            .list_metadata(&params)
            .await
            .map_err(|e| format!("listing Services: {e}"))?;
        out.extend(
            page.items
                .into_iter()
                .filter_map(|s| Some((s.metadata.namespace?, s.metadata.name?))),
        );
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    if out.is_empty() {
        return Err("the API lists no Services".into());
    }
    Ok(out)
}

/// The first `nameserver` of a resolv.conf, on port 53.
pub fn nameserver(resolv_conf: &str) -> Option<SocketAddr> {
    resolv_conf
        .lines()
        .filter_map(|l| l.strip_prefix("nameserver"))
        .find_map(|rest| rest.trim().parse::<IpAddr>().ok())
        .map(|ip| SocketAddr::new(ip, 53))
}

/// `--target`: `resolv.conf` means the DNS server this pod's lookups go to.
pub fn target(arg: &str) -> Result<SocketAddr, String> {
    if arg == "resolv.conf" {
        let text = std::fs::read_to_string("/etc/resolv.conf").map_err(|e| format!("/etc/resolv.conf: {e}"))?;
        return nameserver(&text).ok_or("/etc/resolv.conf names no nameserver".into());
    }
    arg.parse()
        .map_err(|_| format!("'{arg}' is not IP:PORT or resolv.conf"))
}

/// This host's name (a pod's name in Kubernetes) and its node's
/// (`$NODE_NAME`, from the downward API), when known.
pub fn identity() -> (String, Option<String>) {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    (host, std::env::var("NODE_NAME").ok().filter(|n| !n.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_the_pods_nameserver() {
        let conf = "search default.svc.cluster.local svc.cluster.local\nnameserver 10.96.0.10\nnameserver 10.96.0.11\noptions ndots:5\n";
        assert_eq!(nameserver(conf), Some("10.96.0.10:53".parse().expect("addr")));
        assert_eq!(nameserver("search x\n"), None);
        assert_eq!(target("127.0.0.1:5353"), Ok("127.0.0.1:5353".parse().expect("addr")));
        assert!(target("dns").is_err());
    }
}
