//! MaxMind DB files written at test time by `tests/common/mmdb.py` with
//! PyPI's `mmdb-writer`, from the venv `tests/run` makes
//! (`target/tools/mmdb`): `city`, `asn`, `unknown` (CoreDNS's geoip
//! testdata records) and `views` (127.0.0.1 in NL, 127.0.0.2 in GB).

use std::path::{Path, PathBuf};
use std::process::Command;

/// What to run when the venv is missing.
pub const INSTALL: &str = "run tests/run once: it makes the venv target/tools/mmdb with mmdb-writer";

/// The venv's python, if `tests/run` made it.
pub fn python() -> Result<PathBuf, String> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools/mmdb/bin/python");
    match p.is_file() {
        true => Ok(p),
        false => Err(format!("{} is missing", p.display())),
    }
}

/// Writes database `kind` to `path`.
pub fn write(kind: &str, path: &Path) -> Result<(), String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/common/mmdb.py");
    let out = Command::new(python()?)
        .arg(script)
        .args([kind.as_ref(), path.as_os_str()])
        .output()
        .map_err(|e| format!("mmdb.py: {e}"))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!("mmdb.py {kind}: {}", String::from_utf8_lossy(&out.stderr))),
    }
}
