//! The netfilter rules that make a node-local cache worth running, as
//! node-cache installs them, and the `iptables` front-end that programs
//! them.
//!
//! Per address (node-cache's `initIptables`, in its order):
//!
//! ```text
//! raw    PREROUTING  -p tcp|udp -d ADDR --dport DNS     -j NOTRACK   queries from pods skip conntrack
//! filter INPUT       -p tcp|udp -d ADDR --dport DNS     -j ACCEPT    ... so no "ctstate" rule drops them
//! raw    OUTPUT      -p tcp|udp -s ADDR --sport DNS     -j NOTRACK   answers skip conntrack
//! filter OUTPUT      -p tcp|udp -s ADDR --sport DNS     -j ACCEPT
//! raw    OUTPUT      -p tcp|udp -d ADDR --dport DNS     -j NOTRACK   queries from the node itself
//! raw    OUTPUT      -p tcp     -d ADDR --dport HEALTH  -j NOTRACK   the liveness probe
//! raw    OUTPUT      -p tcp     -s ADDR --sport HEALTH  -j NOTRACK
//! ```
//!
//! Each is checked with `-C` and inserted at the top with `-I` (node-cache's
//! `EnsureRule(Prepend, ...)`), with `-w` so a busy xtables lock is waited
//! for. The backend is detected as kubernetes-sigs/iptables-wrappers
//! (node-cache's image) detects it: the kubelet's hint chains in
//! iptables-nft's mangle table, then in iptables-legacy's tables; failing
//! both, whichever backend holds more rules; nft when tied. Mixing
//! backends on one node breaks kube-proxy, so this matters.

use std::fmt;
use std::net::IpAddr;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

/// One rule: table, chain, match and target arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub table: &'static str,
    pub chain: &'static str,
    pub args: Vec<String>,
    pub v6: bool,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "-t {} {} {}", self.table, self.chain, self.args.join(" "))
    }
}

/// node-cache's rules for `addresses`, DNS on `port`, health on `health`.
pub fn rules(addresses: &[IpAddr], port: u16, health: u16) -> Vec<Rule> {
    const SPEC: [(&str, &str, &str, &str, bool, &str); 7] = [
        ("raw", "PREROUTING", "-d", "--dport", false, "NOTRACK"),
        ("filter", "INPUT", "-d", "--dport", false, "ACCEPT"),
        ("raw", "OUTPUT", "-s", "--sport", false, "NOTRACK"),
        ("filter", "OUTPUT", "-s", "--sport", false, "ACCEPT"),
        ("raw", "OUTPUT", "-d", "--dport", false, "NOTRACK"),
        ("raw", "OUTPUT", "-d", "--dport", true, "NOTRACK"),
        ("raw", "OUTPUT", "-s", "--sport", true, "NOTRACK"),
    ];
    let mut out = Vec::new();
    for ip in addresses {
        for (table, chain, addr_flag, port_flag, is_health, target) in SPEC {
            let protocols: &[&str] = if is_health { &["tcp"] } else { &["tcp", "udp"] };
            let p = if is_health { health } else { port };
            for proto in protocols {
                let args = [
                    "-p",
                    proto,
                    addr_flag,
                    &ip.to_string(),
                    port_flag,
                    &p.to_string(),
                    "-j",
                    target,
                ];
                out.push(Rule {
                    table,
                    chain,
                    args: args.iter().map(ToString::to_string).collect(),
                    v6: ip.is_ipv6(),
                });
            }
        }
    }
    out
}

/// Which iptables the node uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Nft,
    Legacy,
    /// Only a plain `iptables` binary is installed: it is what the node uses.
    Plain,
}

impl Backend {
    fn binary(self, v6: bool) -> &'static str {
        match (self, v6) {
            (Backend::Nft, false) => "iptables-nft",
            (Backend::Nft, true) => "ip6tables-nft",
            (Backend::Legacy, false) => "iptables-legacy",
            (Backend::Legacy, true) => "ip6tables-legacy",
            (Backend::Plain, false) => "iptables",
            (Backend::Plain, true) => "ip6tables",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.binary(false))
    }
}

/// A failed iptables run: its command and what it printed.
#[derive(Debug, Clone)]
pub struct RuleError {
    pub command: String,
    pub message: String,
}

impl RuleError {
    /// Another process held the xtables lock longer than `-w` waited
    /// (node-cache's `iptables_lock` error type).
    pub fn lock(&self) -> bool {
        self.message.contains("xtables lock")
    }

    /// The capability is missing.
    pub fn permission(&self) -> bool {
        self.message.contains("Permission denied") || self.message.contains("Operation not permitted")
    }
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.command, self.message.trim())?;
        if self.permission() {
            write!(
                f,
                " (nodelocal needs the NET_ADMIN capability, and NET_RAW for iptables-legacy)"
            )?;
        }
        Ok(())
    }
}

/// Runs `program args`, at most 30 s; `(exit code, stdout, stderr)`.
async fn run(program: &str, args: &[&str]) -> Result<(i32, String, String), RuleError> {
    run_with(program, args, None).await
}

/// Runs `program args` with `input` on its stdin (none: /dev/null), at
/// most 30 s; `(exit code, stdout, stderr)`.
pub(super) async fn run_with(
    program: &str,
    args: &[&str],
    input: Option<&[u8]>,
) -> Result<(i32, String, String), RuleError> {
    use tokio::io::AsyncWriteExt;
    let command = || format!("{program} {}", args.join(" "));
    let failed = |message: String| RuleError {
        command: command(),
        message,
    };
    let work = async {
        let mut child = Command::new(program)
            .args(args)
            .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(bytes).await?;
        }
        child.wait_with_output().await
    };
    match tokio::time::timeout(Duration::from_secs(30), work).await {
        Ok(Ok(out)) => Ok((
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )),
        Ok(Err(e)) => Err(failed(format!("cannot run it: {e} (install {program} in the image)"))),
        Err(_) => Err(failed("did not finish within 30 s".into())),
    }
}

/// Whether `program` can be run.
async fn installed(program: &str) -> bool {
    matches!(run(program, &["--version"]).await, Ok((0, _, _)))
}

fn has_kubelet_chains(save: &str) -> bool {
    save.lines()
        .any(|l| l.starts_with(":KUBE-IPTABLES-HINT") || l.starts_with(":KUBE-KUBELET-CANARY"))
}

fn rule_lines(save: &str) -> usize {
    save.lines().filter(|l| l.starts_with('-')).count()
}

/// The output of `program args`, empty when it fails.
async fn save(program: &str, args: &[&str]) -> String {
    run(program, args).await.map(|(_, out, _)| out).unwrap_or_default()
}

/// Picks the backend the node uses (see the module doc).
pub async fn detect() -> Backend {
    if !(installed("iptables-nft").await && installed("iptables-legacy").await) {
        return if installed("iptables-nft").await {
            Backend::Nft
        } else if installed("iptables-legacy").await {
            Backend::Legacy
        } else {
            Backend::Plain
        };
    }
    let nft = [
        save("iptables-nft-save", &["-t", "mangle"]).await,
        save("ip6tables-nft-save", &["-t", "mangle"]).await,
    ];
    if nft.iter().any(|s| has_kubelet_chains(s)) {
        return Backend::Nft;
    }
    // Not `-t mangle` here: iptables-legacy would create the table.
    let legacy = [
        save("iptables-legacy-save", &[]).await,
        save("ip6tables-legacy-save", &[]).await,
    ];
    if legacy.iter().any(|s| has_kubelet_chains(s)) {
        return Backend::Legacy;
    }
    let nft_all = [
        save("iptables-nft-save", &[]).await,
        save("ip6tables-nft-save", &[]).await,
    ];
    let count = |saves: &[String; 2]| saves.iter().map(|s| rule_lines(s)).sum::<usize>();
    if count(&legacy) > count(&nft_all) {
        Backend::Legacy
    } else {
        Backend::Nft
    }
}

/// Rules programmed through one backend.
#[derive(Debug, Clone, Copy)]
pub struct Iptables {
    pub backend: Backend,
}

impl Iptables {
    async fn op(&self, op: &str, rule: &Rule) -> Result<(i32, String), RuleError> {
        let program = self.backend.binary(rule.v6);
        let mut args = vec!["-w", "5", "-t", rule.table, op, rule.chain];
        args.extend(rule.args.iter().map(String::as_str));
        let (code, _, err) = run(program, &args).await?;
        Ok((code, err))
    }

    fn failed(&self, op: &str, rule: &Rule, message: String) -> RuleError {
        RuleError {
            command: format!(
                "{} -w 5 -t {} {op} {} {}",
                self.backend.binary(rule.v6),
                rule.table,
                rule.chain,
                rule.args.join(" ")
            ),
            message,
        }
    }

    /// Whether `rule` is in its chain (`-C`).
    pub async fn exists(&self, rule: &Rule) -> Result<bool, RuleError> {
        match self.op("-C", rule).await? {
            (0, _) => Ok(true),
            (1, err) if err.is_empty() || err.contains("does a matching rule exist") => Ok(false),
            (_, err) => Err(self.failed("-C", rule, err)),
        }
    }

    /// Inserts `rule` at the top of its chain unless it is there; `true`
    /// when it had to be inserted.
    pub async fn ensure(&self, rule: &Rule) -> Result<bool, RuleError> {
        if self.exists(rule).await? {
            return Ok(false);
        }
        match self.op("-I", rule).await? {
            (0, _) => Ok(true),
            (_, err) => Err(self.failed("-I", rule, err)),
        }
    }

    /// Deletes every copy of `rule` (as node-cache's teardown loops).
    pub async fn delete(&self, rule: &Rule) -> Result<(), RuleError> {
        for _ in 0..16 {
            if !self.exists(rule).await? {
                return Ok(());
            }
            if let (code @ 1.., err) = self.op("-D", rule).await? {
                return Err(self.failed("-D", rule, format!("exit {code}: {err}")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twelve_rules_per_address_as_node_cache_writes_them() {
        let ip: IpAddr = "169.254.20.10".parse().expect("ip");
        let r = rules(&[ip], 53, 8080);
        assert_eq!(r.len(), 12);
        let text: Vec<String> = r.iter().map(ToString::to_string).collect();
        assert_eq!(
            text[0],
            "-t raw PREROUTING -p tcp -d 169.254.20.10 --dport 53 -j NOTRACK"
        );
        assert_eq!(text[3], "-t filter INPUT -p udp -d 169.254.20.10 --dport 53 -j ACCEPT");
        assert_eq!(text[5], "-t raw OUTPUT -p udp -s 169.254.20.10 --sport 53 -j NOTRACK");
        assert_eq!(text[7], "-t filter OUTPUT -p udp -s 169.254.20.10 --sport 53 -j ACCEPT");
        assert_eq!(text[9], "-t raw OUTPUT -p udp -d 169.254.20.10 --dport 53 -j NOTRACK");
        assert_eq!(
            text[10],
            "-t raw OUTPUT -p tcp -d 169.254.20.10 --dport 8080 -j NOTRACK"
        );
        assert_eq!(
            text[11],
            "-t raw OUTPUT -p tcp -s 169.254.20.10 --sport 8080 -j NOTRACK"
        );
        let v6 = rules(&["fd00::a".parse().expect("ip")], 53, 8080);
        assert!(v6.iter().all(|r| r.v6) && Backend::Nft.binary(true) == "ip6tables-nft");
    }

    #[test]
    fn detection_reads_kubelet_hints_and_counts_rules() {
        assert!(has_kubelet_chains("*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n"));
        assert!(!has_kubelet_chains(
            "*mangle\n:PREROUTING ACCEPT [0:0]\n-A X -j KUBE-IPTABLES-HINT\n"
        ));
        assert_eq!(
            rule_lines("*raw\n:OUTPUT ACCEPT\n-A OUTPUT -j NOTRACK\n-A OUTPUT -j ACCEPT\nCOMMIT\n"),
            2
        );
        let lock = RuleError {
            command: "iptables".into(),
            message: "Another app is currently holding the xtables lock. Stopped waiting after 5s.".into(),
        };
        assert!(lock.lock() && !lock.permission());
    }
}
