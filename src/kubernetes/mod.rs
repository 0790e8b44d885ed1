//! The `kubernetes` directive: CoreDNS's options plus `snapshot FILE`.
//!
//! ```text
//! kubernetes [ZONES...] {
//!     endpoint URL                 kubeconfig FILE [CONTEXT]      tls CERT KEY CACERT
//!     namespaces NAMESPACE...      labels SELECTOR                pods disabled|insecure|verified
//!     endpoint_pod_names           ttl 0..3600 (default 5)        noendpoints
//!     fallthrough [ZONES...]       ignore empty_service           snapshot FILE
//!     watch_timeout DURATION (default 290s; a silent watch is reconnected 5 s after it)
//!     persist FILE [MAX_AGE]       (default 1h: serve a saved state at start)
//!     resync DURATION              (off: relist every DURATION, counting corrections)
//!     multicluster [ZONES...]      (MCS-API zones, e.g. clusterset.local: one of the directive's)
//! }
//! ```

pub mod client;
pub mod labels;
pub mod print;
pub mod setup;

pub use setup::{parse, KubernetesConfig, Persist, PodMode, Source};
