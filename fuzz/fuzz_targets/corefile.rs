//! The Corefile parser: any text gives a configuration or positioned
//! errors, never a panic (`clusterdns::fuzzing::corefile`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| clusterdns::fuzzing::corefile(data));
