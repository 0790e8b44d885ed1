//! kubectl dumps and API objects: any text is converted or rejected;
//! malformed objects are skipped; never a panic (`clusterdns::fuzzing::Dump`).
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use clusterdns::fuzzing::Dump;
use libfuzzer_sys::fuzz_target;

fn dump() -> &'static Dump {
    static D: OnceLock<Dump> = OnceLock::new();
    D.get_or_init(|| Dump::demo(&Path::new(env!("CARGO_MANIFEST_DIR")).join("..")))
}

fuzz_target!(|data: &[u8]| dump().check(data));
