//! How instances on one node see each other: a directory both can reach
//! (`lockdir`, a hostPath in the DaemonSet) holding
//!
//! ```text
//!  node.lock            flock'd (exclusive) around every change to the node:
//!                       setup, rule installs and checks, and the teardown decision
//!  instance-PID-RAND    one per running instance, flock'd by it for its whole life;
//!                       byte 0 is its phase: s(tarting), S(erving), d(raining)
//! ```
//!
//! An instance is alive exactly while its file is locked: the kernel drops
//! the lock when the process ends, however it ends (`kill -9` too), so a
//! check cannot mistake a dead instance for a live one or the reverse. A
//! file is locked before it gets its `instance-` name (rename keeps the
//! lock), so no one sees it unlocked while its owner lives. A file found
//! unlocked is a dead instance's and is removed by whoever finds it.
//!
//! The last one out tears down: the teardown decision is taken holding
//! `node.lock`, and a newcomer joins (and sets up) holding it too, so a
//! newcomer is either seen by the one leaving, or starts after its teardown
//! and sets everything up again.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

const PREFIX: &str = "instance-";

/// The phase an instance announces to the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Started, not answering yet (loading its store).
    Starting,
    /// Its DNS listeners are bound and answering.
    Serving,
    /// Handing over: taking no new queries, answering what it holds.
    Draining,
}

impl Phase {
    fn byte(self) -> u8 {
        match self {
            Phase::Starting => b's',
            Phase::Serving => b'S',
            Phase::Draining => b'd',
        }
    }

    fn of(byte: u8) -> Phase {
        match byte {
            b'S' => Phase::Serving,
            b'd' => Phase::Draining,
            _ => Phase::Starting,
        }
    }
}

/// This instance's entry in `lockdir`, held until dropped.
pub struct Lease {
    dir: PathBuf,
    name: String,
    file: Flock<File>,
}

/// The node-wide lock, held until dropped.
pub struct NodeLock {
    _lock: Flock<File>,
}

fn lock_error(path: &Path) -> impl Fn((File, Errno)) -> io::Error + '_ {
    move |(_, e)| io::Error::other(format!("cannot lock {}: {e}", path.display()))
}

/// Takes `dir/node.lock`, waiting for another instance to release it.
/// Blocking: call from a blocking thread.
pub fn node_lock(dir: &Path) -> io::Result<NodeLock> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("node.lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)?;
    let lock = Flock::lock(file, FlockArg::LockExclusive).map_err(lock_error(&path))?;
    Ok(NodeLock { _lock: lock })
}

impl Lease {
    /// Announces this instance in `dir` as starting.
    pub fn join(dir: &Path) -> io::Result<Lease> {
        std::fs::create_dir_all(dir)?;
        let name = format!("{PREFIX}{}-{:016x}", std::process::id(), fastrand::u64(..));
        let fresh = dir.join(format!(".{name}"));
        let file = OpenOptions::new()
            .create_new(true)
            .read(true)
            .write(true)
            .open(&fresh)?;
        let file = Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(lock_error(&fresh))?;
        file.write_at(&[Phase::Starting.byte()], 0)?;
        std::fs::rename(&fresh, dir.join(&name))?;
        Ok(Lease {
            dir: dir.to_path_buf(),
            name,
            file,
        })
    }

    /// Announces `phase`.
    pub fn set(&self, phase: Phase) {
        if let Err(e) = self.file.write_at(&[phase.byte()], 0) {
            tracing::warn!(target: "nodelocal", "cannot write {}: {e}", self.dir.join(&self.name).display());
        }
    }

    /// This instance's name in `lockdir`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The other live instances and their phases; removes the files of
    /// dead ones.
    pub fn others(&self) -> Vec<(String, Phase)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut live = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with(PREFIX) || name == self.name {
                continue;
            }
            let path = entry.path();
            let Ok(file) = OpenOptions::new().read(true).write(true).open(&path) else {
                continue;
            };
            match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(_dead) => {
                    let _ = std::fs::remove_file(&path);
                    tracing::info!(target: "nodelocal", "instance {name} is gone (its lock was free): removed its lease");
                }
                Err((file, Errno::EWOULDBLOCK)) => {
                    let mut phase = [0u8];
                    let _ = file.read_at(&mut phase, 0);
                    live.push((name, Phase::of(phase[0])));
                }
                Err((_, e)) => tracing::warn!(target: "nodelocal", "cannot check {}: {e}", path.display()),
            }
        }
        live
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.dir.join(&self.name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_instances_are_seen_dead_ones_are_removed() {
        let dir = std::env::temp_dir().join(format!("lease-test-{}", fastrand::u64(..)));
        let a = Lease::join(&dir).expect("a joins");
        let b = Lease::join(&dir).expect("b joins");
        assert_eq!(a.others(), vec![(b.name().to_string(), Phase::Starting)]);
        b.set(Phase::Serving);
        assert_eq!(a.others(), vec![(b.name().to_string(), Phase::Serving)]);
        // A file nobody holds: an instance that died.
        std::fs::write(dir.join("instance-1-dead"), b"S").expect("write");
        assert_eq!(b.others(), vec![(a.name().to_string(), Phase::Starting)]);
        assert!(!dir.join("instance-1-dead").exists(), "a dead lease is removed");
        drop(b);
        assert!(a.others().is_empty());
        let lock = node_lock(&dir).expect("node lock");
        drop(lock);
        drop(a);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
