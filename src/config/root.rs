//! `root PATH`: the directory a block's `file` directives resolve relative
//! zone-file names in (CoreDNS's `root`; relative to the Corefile's
//! directory when itself relative). A path that does not exist yet is
//! accepted with a warning, as CoreDNS does (the directory may appear
//! later); one that cannot be looked at is an error.

use std::path::{Path, PathBuf};

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::problem::ConfigError;
use crate::corefile::words::Block;

/// Reads one `root` directive: its path, resolved against `dir`.
pub fn parse(d: &Directive, dir: &Path, errors: &mut Vec<ConfigError>) -> Option<PathBuf> {
    if !Args::from(d).count(1, 1, errors) {
        return None;
    }
    let word = &d.args[0];
    let path = dir.join(&word.text);
    let unreadable = |why: &dyn std::fmt::Display| {
        ConfigError::new(
            &word.pos,
            format!("root: unable to access root path '{}': {why}", word.text),
        )
    };
    if word.text.contains('\0') {
        errors.push(unreadable(&"the path holds a NUL byte"));
        return None;
    }
    match std::fs::metadata(&path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::warn!(target: "root", "root path does not exist: {}", path.display());
        }
        Err(e) => {
            errors.push(unreadable(&e));
            return None;
        }
    }
    Some(path)
}

/// The directory relative file names of a block resolve in: its `root`
/// when it has one, else the Corefile's directory.
pub fn dir<'a>(root: Option<&'a Path>, corefile_dir: &'a Path) -> &'a Path {
    root.unwrap_or(corefile_dir)
}

/// `check`'s line for a block's `root`.
pub(crate) fn print(b: &mut Block, root: Option<&Path>) {
    if let Some(r) = root {
        b.line(1, format_args!("root {}", r.display()));
    }
}

#[cfg(test)]
mod tests {

    /// A block's `file` names resolve under its `root`, wherever `root` is
    /// written in the block; another block keeps the Corefile's directory.
    #[test]
    fn file_names_resolve_under_root() {
        let dir = std::env::temp_dir().join(format!("clusterdns-root-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("zones")).expect("temp dir");
        let zone = "example.org. 3600 IN SOA ns. admin. 1 7200 3600 1209600 3600\n";
        std::fs::write(dir.join("zones/db.example.org"), zone).expect("zone file");
        std::fs::write(dir.join("db.example.net"), zone.replace(".org", ".net")).expect("zone file");
        let text = "example.org {\n    file db.example.org\n    root zones\n}\n\
                    example.net {\n    file db.example.net\n}\n";
        let cfg = crate::config::load_str(&dir.join("Corefile"), text, 53).expect("loads");
        let printed: Vec<String> = cfg.servers.iter().map(|s| s.printed("file")).collect();
        for (printed, path) in printed
            .iter()
            .zip([dir.join("zones/db.example.org"), dir.join("db.example.net")])
        {
            assert!(printed.contains(&format!("file {} ", path.display())), "{printed}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
