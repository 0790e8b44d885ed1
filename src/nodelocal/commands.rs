//! The plain `iptables` commands of the node-local image, for an operator
//! (`kubectl exec ... -- iptables -t raw -S`). Debian makes `iptables`,
//! `ip6tables` and their `-save`/`-restore` with update-alternatives, which
//! an extracted image never ran; the image links each of them to
//! `LOCKDIR/xtables` instead (deploy/image/images.py), and this points that
//! link at the multi-call binary of the backend nodelocal chose, as
//! Kubernetes' iptables-wrapper re-points the alternatives on first use.
//! A multi-call binary acts as the name it was called by. Best effort: a
//! read-only or foreign `lockdir` only costs the operator the short names.

use std::path::{Path, PathBuf};

use super::rules::Backend;

/// The link's name in `lockdir`.
pub const LINK: &str = "xtables";

/// The multi-call binary behind `backend`'s commands; `None` for a plain
/// `iptables`, which already is what the short names run.
fn multi_call(backend: Backend) -> Option<&'static str> {
    match backend {
        Backend::Nft => Some("xtables-nft-multi"),
        Backend::Legacy => Some("xtables-legacy-multi"),
        Backend::Plain => None,
    }
}

/// `name` in the first directory of `path` (a `PATH` value) holding it.
fn find(name: &str, path: &str) -> Option<PathBuf> {
    std::env::split_paths(path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// Points `lockdir/xtables` at `backend`'s multi-call binary found on
/// `path`, replacing the link at once (a new link renamed over the old);
/// the target, or `None` when there is nothing to point at.
pub fn point(lockdir: &Path, backend: Backend, path: &str) -> std::io::Result<Option<PathBuf>> {
    let Some(target) = multi_call(backend).and_then(|name| find(name, path)) else {
        return Ok(None);
    };
    std::fs::create_dir_all(lockdir)?;
    let staged = lockdir.join(format!(".{LINK}.{}", std::process::id()));
    let _ = std::fs::remove_file(&staged);
    std::os::unix::fs::symlink(&target, &staged)?;
    std::fs::rename(&staged, lockdir.join(LINK))?;
    Ok(Some(target))
}

/// [`point`] with the process's `PATH`, its outcome logged.
pub fn point_logged(lockdir: &Path, backend: Backend) {
    let path = std::env::var("PATH").unwrap_or_default();
    match point(lockdir, backend, &path) {
        Ok(Some(target)) => {
            tracing::info!(target: "nodelocal", "iptables commands: {} -> {}", lockdir.join(LINK).display(), target.display());
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(target: "nodelocal", "cannot point {} at the {backend} commands: {e}", lockdir.join(LINK).display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_follows_the_backend_chosen() {
        let dir = std::env::temp_dir().join(format!("clusterdns-commands-{}", fastrand::u64(..)));
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).expect("dir");
        for name in ["xtables-nft-multi", "xtables-legacy-multi"] {
            std::fs::write(bin.join(name), b"").expect("write");
        }
        let path = format!("/nonexistent:{}", bin.display());
        let lockdir = dir.join("lock");
        let link = lockdir.join(LINK);
        let read = || std::fs::read_link(&link).expect("a link");
        assert_eq!(
            point(&lockdir, Backend::Nft, &path).expect("point"),
            Some(bin.join("xtables-nft-multi"))
        );
        assert_eq!(read(), bin.join("xtables-nft-multi"));
        // a node that turns out to use legacy: the same link, re-pointed
        assert_eq!(
            point(&lockdir, Backend::Legacy, &path).expect("point"),
            Some(bin.join("xtables-legacy-multi"))
        );
        assert_eq!(read(), bin.join("xtables-legacy-multi"));
        // nothing to point at: the link is left as it was
        assert_eq!(point(&lockdir, Backend::Plain, &path).expect("point"), None);
        assert_eq!(point(&lockdir, Backend::Nft, "/nonexistent").expect("point"), None);
        assert_eq!(read(), bin.join("xtables-legacy-multi"));
        let names: Vec<_> = std::fs::read_dir(&lockdir)
            .expect("dir")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, [LINK], "no staged link left behind");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
