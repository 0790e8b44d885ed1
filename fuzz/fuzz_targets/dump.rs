//! kubectl dumps and API objects: any text is converted or rejected with a
//! position; malformed objects are skipped and named; never a panic.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use clusterdns::config::KubernetesConfig;
use libfuzzer_sys::fuzz_target;

fn config() -> &'static KubernetesConfig {
    static C: OnceLock<KubernetesConfig> = OnceLock::new();
    C.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut k = clusterdns::config::load(&root.join("zones/Corefile"), 53).expect("demo").servers[0]
            .kubernetes
            .clone()
            .expect("kubernetes");
        k.pods = clusterdns::config::PodMode::Verified;
        k
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(loaded) = clusterdns::watch::snapshot::read_str("fuzz.yaml", text, config()) {
        let mut writer = clusterdns::store::Writer::new(&clusterdns::store::Kind::ALL);
        clusterdns::watch::snapshot::apply(&mut writer, loaded.records);
        let _ = writer.snapshot(1);
    }
});
