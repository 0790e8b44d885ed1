//! The whole query path, bytes in → bytes out, over the demo cluster, with
//! the properties every reply must have (`clusterdns::fuzzing::QueryPath`):
//! the wire parser agrees with hickory's decoder, replies are strict and
//! hickory's bytes, memo and cache-hit replays equal the full path's reply.
#![no_main]

use std::path::Path;
use std::sync::{Mutex, OnceLock};

use clusterdns::fuzzing::QueryPath;
use libfuzzer_sys::fuzz_target;

fn path() -> &'static Mutex<QueryPath> {
    static P: OnceLock<Mutex<QueryPath>> = OnceLock::new();
    P.get_or_init(|| Mutex::new(QueryPath::demo(&Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))))
}

fuzz_target!(|data: &[u8]| {
    if let Ok(mut p) = path().lock() {
        p.check(data);
    }
});
