//! `loadbalance weighted WEIGHTFILE { reload DURATION }`: the weight file,
//! read when the Corefile loads and again every DURATION (30s; `0s`
//! never) when its bytes changed, as CoreDNS's weighted policy does.
//!
//! ```text
//! # comment
//! www.example.org          a domain name (fully qualified or not)
//! 10.0.0.1 100             an address of it and its weight, 1..255
//! 10.0.0.2 20              (an address not listed weighs 1)
//! ```
//!
//! A file that does not parse is a load error; at a reload it is logged
//! and the weights before stay. A file that cannot be opened is a load
//! error only when it is never reloaded (CoreDNS retries it otherwise).

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;

/// Each domain (lowercase, fully qualified) with its addresses' weights.
pub type Table = HashMap<String, Vec<(IpAddr, u8)>>;

/// A weight file and what it last held.
pub struct Weights {
    pub file: PathBuf,
    pub reload: Duration,
    table: ArcSwap<Table>,
    /// The bytes last read, to skip a reload of an unchanged file.
    last: Mutex<Vec<u8>>,
}

impl fmt::Debug for Weights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Weights({}, reload {:?})", self.file.display(), self.reload)
    }
}

/// Two configurations are the same when they read the same file as often.
impl PartialEq for Weights {
    fn eq(&self, other: &Weights) -> bool {
        self.file == other.file && self.reload == other.reload
    }
}

impl Eq for Weights {}

/// Reads the weight file `text` (named `file` in errors) as CoreDNS does.
pub fn parse(text: &str, file: &str) -> Result<Table, String> {
    let mut table = Table::new();
    let mut domain: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            [name] => {
                if name.parse::<IpAddr>().is_ok() {
                    return Err(format!(
                        "wrong domain name:\"{name}\" in weight file {file}. (Maybe a missing weight value?)"
                    ));
                }
                let mut name = name.to_ascii_lowercase();
                if !name.ends_with('.') {
                    name.push('.');
                }
                table.entry(name.clone()).or_default();
                domain = Some(name);
            }
            [ip, weight] => {
                let ip: IpAddr = ip
                    .parse()
                    .map_err(|_| format!("wrong IP address:\"{ip}\" in weight file {file}"))?;
                let weight = weight
                    .parse::<u8>()
                    .ok()
                    .filter(|w| *w > 0)
                    .ok_or_else(|| format!("wrong weight value:\"{weight}\" in weight file {file}"))?;
                let name = domain
                    .as_ref()
                    .ok_or_else(|| format!("missing domain name in weight file {file}"))?;
                table.entry(name.clone()).or_default().push((ip, weight));
            }
            _ => return Err(format!("could not parse weight line:\"{line}\" in weight file {file}")),
        }
    }
    Ok(table)
}

impl Weights {
    /// Reads `file` now and starts its reloads; the error is the load's.
    pub fn load(file: PathBuf, reload: Duration) -> Result<Arc<Weights>, String> {
        let weights = Arc::new(Weights {
            file,
            reload,
            table: ArcSwap::from_pointee(Table::new()),
            last: Mutex::default(),
        });
        match weights.update() {
            Err(Unread::Open(e)) if !reload.is_zero() => {
                tracing::warn!(target: "loadbalance", "{e}; trying again in {reload:?}");
            }
            Err(Unread::Open(e) | Unread::Parse(e)) => return Err(e),
            Ok(()) => {}
        }
        if !reload.is_zero() {
            let weak = Arc::downgrade(&weights);
            let _ = std::thread::Builder::new()
                .name("lb-weights".into())
                .spawn(move || reloads(&weak, reload));
        }
        Ok(weights)
    }

    /// The weight of `ip` at `owner` (lowercase, fully qualified): 1 when
    /// the file does not list it.
    pub fn weight(&self, owner: &str, ip: IpAddr) -> u8 {
        let table = self.table.load();
        table
            .get(owner)
            .and_then(|ws| ws.iter().find(|(a, _)| *a == ip))
            .map_or(1, |(_, w)| *w)
    }

    fn update(&self) -> Result<(), Unread> {
        let shown = self.file.display().to_string();
        let bytes = std::fs::read(&self.file)
            .map_err(|e| Unread::Open(format!("loadbalance: cannot open weight file {shown}: {e}")))?;
        let mut last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if *last == bytes {
            return Ok(());
        }
        let table =
            parse(&String::from_utf8_lossy(&bytes), &shown).map_err(|e| Unread::Parse(format!("loadbalance: {e}")))?;
        self.table.store(Arc::new(table));
        *last = bytes;
        Ok(())
    }
}

enum Unread {
    Open(String),
    Parse(String),
}

/// Re-reads the file every `every` while the configuration holding it lives.
fn reloads(weights: &Weak<Weights>, every: Duration) {
    loop {
        std::thread::sleep(every);
        let Some(w) = weights.upgrade() else { return };
        if let Err(Unread::Open(e) | Unread::Parse(e)) = w.update() {
            tracing::error!(target: "loadbalance", "{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn weight_files_read_as_coredns_reads_them() {
        let two = "# domain 1\nw1.example.org\n192.168.1.15   10\n192.168.1.14   20\n\n\
                   # domain 2\nw2.example.org\n # domain 3\n w3.example.org\n 192.168.2.16 11\n";
        let t = parse(two, "f").expect("valid");
        assert_eq!(t.len(), 3);
        assert_eq!(
            t["w1.example.org."],
            [
                ("192.168.1.15".parse().expect("ip"), 10),
                ("192.168.1.14".parse().expect("ip"), 20)
            ]
        );
        assert!(t["w2.example.org."].is_empty());
        assert!(parse("", "f").expect("empty").is_empty());
        for (bad, why) in [
            ("w1,example.org\n192.168.1.14\n", "wrong domain name"),
            ("192.168.1.14 10\nw2,example.org\n", "missing domain name"),
            ("w1,example.org\n192.168.1.300 10\n", "wrong IP address"),
            ("w1,example.org\n192.168.1.14 300\n", "wrong weight value"),
            ("w1,example.org\n192.168.1.14 0\n", "wrong weight value"),
            ("w1 a b\n", "could not parse weight line"),
        ] {
            let e = parse(bad, "f").expect_err(bad);
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }
}
