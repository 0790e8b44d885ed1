//! `clusterdns migrate`: a kube-dns ConfigMap, or a Corefile written for an
//! older CoreDNS (1.2 to 1.13, as kubeadm shipped them), becomes a Corefile
//! clusterdns loads, printed with a `# migrate:` note above every change.
//!
//! ```text
//!  input ─► configmap (Corefile? CoreDNS ConfigMap? kube-dns ConfigMap?)
//!             │ Corefile text                     │ kube-dns data
//!             ▼                                   ▼
//!           doc (blocks, items, comments)       kubedns (kubeadm's Corefile,
//!             ▼                                   stub domains, upstreams)
//!           corefile (renames, removals)          │
//!             ▼                                   │
//!           defaults (new defaults, one forward)  │
//!             ▼                                   ▼
//!           print (text + where each word came from) ─► run (load it as
//!                                                       `check` does; print)
//! ```
//!
//! Start reading at `run.rs`. Nothing here is on the query or watch path.

mod configmap;
mod corefile;
mod defaults;
mod doc;
mod kubedns;
mod print;
mod run;

pub use run::{main, migrate, Migrated, USAGE};
