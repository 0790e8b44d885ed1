//! BIND's tools as the DNSSEC tests drive them: keys made by
//! `dnssec-keygen`, a key written as a trust anchor for `delv`, and delv's
//! verdict on one question asked of a server on loopback.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The zone both DNSSEC tests serve (signed by BIND, or on the fly).
pub const ZONE: &str = "\
$ORIGIN example.test.
$TTL 300
@ IN SOA ns hostmaster 1 3600 600 86400 300
@ IN NS ns
ns IN A 192.0.2.1
www IN A 192.0.2.10
alias IN CNAME www
*.wild IN A 192.0.2.20
";

/// delv's verdicts.
pub const POSITIVE: &str = "; fully validated";
pub const NEGATIVE: &str = "; negative response, fully validated";

/// BIND's `tools` (dnssec-keygen, delv, ...) for `test`, or `None` when
/// one is missing outside CI (SKIP printed; under CI the test fails).
pub fn tools(test: &str, tools: &[&str]) -> Option<Vec<PathBuf>> {
    let have = tools.iter().map(|t| super::installed(t));
    let have = have.collect::<Result<Vec<_>, String>>();
    super::needs(
        test,
        have,
        "apt-get install bind9-utils bind9-dnsutils (tests/run installs them)",
    )
}

/// Runs `cmd` in `dir`, panicking with its output when it fails.
pub fn run_in(dir: &Path, cmd: &Path, args: &[&str]) -> String {
    let out = Command::new(cmd).current_dir(dir).args(args).output().expect("run");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{} {args:?}: {text}", cmd.display());
    text
}

/// The key `dir/BASE.key` (as dnssec-keygen writes it) as delv's only
/// trust anchor, written to `dir/anchor`.
pub fn anchor(dir: &Path, base: &str, anchor: &str) {
    let key = std::fs::read_to_string(dir.join(format!("{base}.key"))).expect("the key");
    let words: Vec<&str> = key
        .lines()
        .filter(|l| !l.starts_with(';'))
        .flat_map(str::split_whitespace)
        .collect();
    let at = words.iter().position(|w| *w == "DNSKEY").expect("a DNSKEY");
    let text = format!(
        "trust-anchors {{ {} static-key {} {} {} \"{}\"; }};\n",
        words[0],
        words[at + 1],
        words[at + 2],
        words[at + 3],
        words[at + 4..].concat()
    );
    std::fs::write(dir.join(anchor), text).expect("write anchor");
}

/// delv's verdict on `name` `qtype` asked of 127.0.0.1:`port` under
/// `root`, trusting only `anchor`: its lines (`; fully validated`, `;
/// negative response, fully validated`, or why validation failed).
pub fn delv(delv: &Path, anchor: &Path, root: &str, port: u16, name: &str, qtype: &str) -> String {
    let args = [
        "@127.0.0.1",
        "-p",
        &port.to_string(),
        "-a",
        anchor.to_str().expect("path"),
        &format!("+root={root}"),
        name,
        qtype,
    ]
    .map(String::from);
    let out = Command::new(delv).args(&args).output().expect("run delv");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Asks `ask` each `(name, qtype, verdict, shows)`: delv's output must hold
/// the verdict ([`POSITIVE`], [`NEGATIVE`]) and the text shown.
pub fn expect(cases: &[(&str, &str, &str, &str)], ask: impl Fn(&str, &str) -> String) {
    for (name, qtype, verdict, shows) in cases {
        let out = ask(name, qtype);
        assert!(out.contains(verdict), "{name} {qtype}: {out}");
        assert!(out.contains(shows), "{name} {qtype}: {out}");
    }
}
