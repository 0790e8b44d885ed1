//! How `clusterdns check` prints `kubernetes`: every option with its value,
//! defaults written out, so the printout loads again to the same values.

use super::setup::{KubernetesConfig, PodMode, Source};
use crate::corefile::words::{duration, names, with, Block};

pub(crate) fn kubernetes(b: &mut Block, k: &KubernetesConfig) {
    let mut options = Vec::new();
    match &k.source {
        Source::Snapshot(p) => options.push(format!("snapshot {}", p.display())),
        Source::Api {
            endpoint,
            kubeconfig,
            tls,
        } => {
            options.extend(endpoint.as_ref().map(|e| format!("endpoint {e}")));
            if let Some((path, context)) = kubeconfig {
                options.push(
                    format!("kubeconfig {} {}", path.display(), context.as_deref().unwrap_or(""))
                        .trim_end()
                        .to_string(),
                );
            }
            if let Some([cert, key, ca]) = tls {
                options.push(format!("tls {} {} {}", cert.display(), key.display(), ca.display()));
            }
            options.push(format!("watch_timeout {}", duration(k.watch_timeout)));
            if let Some(p) = &k.persist {
                options.push(format!("persist {} {}", p.path.display(), duration(p.max_age)));
            }
            options.extend(k.resync.map(|r| format!("resync {}", duration(r))));
        }
    }
    if !k.namespaces.is_empty() {
        options.push(format!("namespaces {}", k.namespaces.join(" ")));
    }
    options.extend(k.labels_text.as_ref().map(|l| format!("labels {l}")));
    options.extend(k.namespace_labels.as_ref().map(|s| format!("namespace_labels {s}")));
    let pods = match k.pods {
        PodMode::Disabled => "disabled",
        PodMode::Insecure => "insecure",
        PodMode::Verified => "verified",
    };
    options.push(format!("pods {pods}"));
    options.extend(k.endpoint_pod_names.then(|| "endpoint_pod_names".to_string()));
    options.push(format!("ttl {}", k.ttl));
    options.extend(k.noendpoints.then(|| "noendpoints".to_string()));
    options.extend(k.fallthrough.as_ref().map(|z| with("fallthrough", &names(z))));
    options.extend(k.ignore_empty_service.then(|| "ignore empty_service".to_string()));
    options.extend(crate::kubernetes::client::effective(&k.client, duration));
    options.extend((!k.multicluster.is_empty()).then(|| with("multicluster", &names(&k.multicluster))));
    b.directive(with("kubernetes", &names(&k.zones)), &options);
}
