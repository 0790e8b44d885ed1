//! The demo handler and the properties the fuzz targets check, shared by the libFuzzer targets
//! in `fuzz/` and the bounded run of them in `tests/fuzz_smoke.rs` (which
//! `.ci/run` runs on the stable toolchain). Each takes any bytes and
//! panics only when a property fails: the query path's replies
//! ([`path`]), the request parser against hickory's decoder
//! ([`request`]), cache hits replayed as bytes ([`hits`]), the Corefile
//! parser and the dump conversion (here).
//!
//! Compiled only with the cargo feature `fuzzing` (or in this crate's own
//! unit tests): `fuzz/` enables it, as does the crate's dev-dependency on
//! itself for its tests and benches; `cargo build` leaves it out.

use std::path::Path;

use crate::kubernetes::KubernetesConfig;
use crate::store::Kind;
use crate::store::Writer;

mod demo;
mod hits;
mod path;
mod reply;
mod request;
mod strict;

pub use demo::{demo_handler, without_direct};
pub use hits::CacheHits;
pub use path::QueryPath;
pub use reply::with_echo;
pub use request::parser_agrees;
pub use strict::parse_strict;

/// The Corefile parser: any text gives a configuration or errors that
/// each start with the file's name (`FILE:LINE:COL: message`).
pub fn corefile(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // Imports and files are read from disk: keep away from device and
    // process files that never end.
    if text.contains("/dev") || text.contains("/proc") || text.contains("/sys") {
        return;
    }
    match crate::config::load_str(Path::new("/nonexistent/Corefile"), text, 53) {
        Ok(config) => {
            let _ = config.to_string();
        }
        Err(errors) => {
            for e in &errors.0 {
                assert!(e.to_string().starts_with("/nonexistent/"), "{e}");
            }
        }
    }
}

/// kubectl dumps and API objects: any text is converted (malformed
/// objects skipped) or rejected; what converts builds a snapshot.
pub struct Dump {
    config: KubernetesConfig,
}

impl Dump {
    /// With the demo's `kubernetes` block and `pods verified`.
    pub fn demo(root: &Path) -> Dump {
        let demo = crate::config::load(&root.join("zones/Corefile"), 53).expect("the demo Corefile loads");
        let mut config = demo.servers[0].kubernetes.clone().expect("the demo has kubernetes");
        config.pods = crate::kubernetes::PodMode::Verified;
        Dump { config }
    }

    pub fn check(&self, data: &[u8]) {
        let Ok(text) = std::str::from_utf8(data) else { return };
        if let Ok(loaded) = crate::watch::snapshot::read_str("fuzz.yaml", text, &self.config) {
            let mut writer = Writer::new(&Kind::ALL);
            crate::watch::snapshot::apply(&mut writer, loaded.records);
            let _ = writer.snapshot(1);
        }
    }
}
