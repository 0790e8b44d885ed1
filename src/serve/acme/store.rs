//! What `tls { acme }` keeps under `storage`, one directory per ACME
//! directory URL (`Acme::ca_dir`): `account.json` (the account's URL and
//! private key, as instant-acme serializes them) and one `DOMAIN.pem` per
//! certificate (the chain, then its private key: one file, replaced whole
//! by a rename, so the listener never reads a chain with the wrong key).
//! Directories are created 0700 and files written 0600. A file that does
//! not read is an error naming it.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

/// The account's file in `dir` (the CA's directory under `storage`).
pub fn account_file(dir: &Path) -> PathBuf {
    dir.join("account.json")
}

/// The stored account credentials, `None` when there are none yet.
pub fn read_account(dir: &Path) -> Result<Option<instant_acme::AccountCredentials>, String> {
    let path = account_file(dir);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("{}: not an ACME account file: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Stores the account credentials.
pub fn write_account(dir: &Path, credentials: &instant_acme::AccountCredentials) -> Result<(), String> {
    let json = serde_json::to_vec_pretty(credentials).map_err(|e| e.to_string())?;
    write(&account_file(dir), &json)
}

/// Writes `bytes` to `path` (mode 0600) through a temporary file renamed
/// over it, creating the directories (0700).
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let tmp = path.with_extension("tmp");
    let result = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, path));
    result.map_err(|e| format!("{}: {e}", path.display()))
}

/// When the certificate in `path` stops being valid, and when it should
/// be renewed (a third of its lifetime before, as certmagic does);
/// `Ok(None)`: no file yet.
pub fn validity(path: &Path) -> Result<Option<(SystemTime, SystemTime)>, String> {
    let first = match CertificateDer::pem_file_iter(path) {
        Ok(mut iter) => iter.next(),
        Err(rustls::pki_types::pem::Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let der = first
        .ok_or_else(|| format!("{}: no PEM certificate in it", path.display()))?
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let (_, cert) =
        x509_parser::parse_x509_certificate(&der).map_err(|e| format!("{}: not a certificate: {e}", path.display()))?;
    let at = |t: i64| UNIX_EPOCH + Duration::from_secs(t.max(0) as u64);
    let (from, until) = (
        cert.validity().not_before.timestamp(),
        cert.validity().not_after.timestamp(),
    );
    let renew = until - (until - from).max(0) / 3;
    Ok(Some((at(until), at(renew))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_private_and_corrupt_ones_named() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("clusterdns-acme-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(read_account(&dir).expect("no account is fine").is_none());
        let file = dir.join("sub").join("x.pem");
        assert!(validity(&file).expect("missing is fine").is_none());
        write(&file, b"garbage").expect("write");
        let mode = std::fs::metadata(&file).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let err = validity(&file).expect_err("garbage");
        assert!(err.contains("x.pem"), "{err}");
        write(&account_file(&dir), b"{not json").expect("write");
        let err = read_account(&dir).err().expect("corrupt");
        assert!(err.contains("account.json"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
