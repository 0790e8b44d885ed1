//! `nsid [DATA]`: the words of DATA joined by single spaces, as CoreDNS
//! joins them; the host name without. Once per server block.

use crate::corefile::blocks::Directive;
use crate::corefile::problem::ConfigError;

/// The longest DATA taken: the option must leave room for an answer in a
/// 512-byte UDP reply.
pub const MAX_LEN: usize = 256;

/// Reads `nsid [DATA]`; `None` (with an error) when DATA is too long.
pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> Option<String> {
    if d.args.is_empty() {
        return Some(hostname());
    }
    let data = d.args.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ");
    if data.len() > MAX_LEN {
        errors.push(ConfigError::new(
            &d.args[0].pos,
            format!("nsid: DATA is {} bytes, at most {MAX_LEN} are taken", data.len()),
        ));
        return None;
    }
    Some(data)
}

/// The host name, CoreDNS's default DATA ("localhost" when unknown).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "localhost".to_string())
        .chars()
        .take(MAX_LEN)
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::config::tests::{loaded as load, one_error_each};

    fn nsid(body: &str) -> Option<String> {
        let config = load(&format!(".:53 {{\n{body}\n}}\n")).expect("loads");
        config.servers[0].nsid.clone()
    }

    /// CoreDNS's TestSetupNsid: DATA's words joined, the host name without.
    #[test]
    fn data_is_the_words_joined_or_the_host_name() {
        assert_eq!(nsid("nsid \"ps0\"").as_deref(), Some("ps0"));
        assert_eq!(nsid("nsid \"tf 2\"").as_deref(), Some("tf 2"));
        assert_eq!(nsid("nsid Use The Force").as_deref(), Some("Use The Force"));
        assert_eq!(nsid("nsid"), Some(super::hostname()));
        assert!(!super::hostname().is_empty());
        assert_eq!(nsid("any"), None);
    }

    #[test]
    fn once_per_block_and_not_too_long() {
        let long = format!(".:53 {{\nnsid {}\n}}\n", "x".repeat(257));
        one_error_each(
            &[
                (
                    ".:53 {\nnsid\nnsid\n}\n",
                    "/tmp/Corefile:3:1: nsid: only one per server block",
                ),
                (&long, "/tmp/Corefile:2:6: nsid: DATA is 257 bytes, at most 256"),
            ],
            load,
        );
    }
}
