//! The Corefile parser: any text gives a configuration or positioned
//! errors, never a panic.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // Imports and files are read from disk: keep the fuzzer away from
    // device and process files that never end.
    if text.contains("/dev") || text.contains("/proc") || text.contains("/sys") {
        return;
    }
    match clusterdns::config::load_str(Path::new("/nonexistent/Corefile"), text, 53) {
        Ok(config) => {
            let _ = config.to_string();
        }
        Err(errors) => {
            for e in &errors.0 {
                assert!(e.to_string().starts_with("/nonexistent/"), "{e}");
            }
        }
    }
});
