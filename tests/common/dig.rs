//! dig and kdig replies read back section by section, for end-to-end
//! assertions on what a real client prints.

use super::{run, Server};

/// One dig reply, as dig prints it.
#[derive(Debug)]
pub struct Dig {
    pub status: String,
    pub flags: String,
    pub question: String,
    pub answers: Vec<String>,
    pub authority: Vec<String>,
    pub additional: Vec<String>,
    pub text: String,
}

impl Dig {
    /// The data of the answer records (the fields after the type), sorted.
    pub fn data(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .answers
            .iter()
            .map(|r| r.splitn(5, ' ').nth(4).unwrap_or_default().to_string())
            .collect();
        v.sort();
        v
    }

    /// Whether the AA flag is set.
    pub fn aa(&self) -> bool {
        self.flags.split(' ').any(|f| f == "aa")
    }
}

/// Section lines with runs of spaces and tabs made one space.
fn section(text: &str, title: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.starts_with(&format!(";; {title} SECTION:")))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| !l.starts_with(';') || title == "QUESTION")
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// Runs `cmd` (dig or kdig) against `addr` port `port` with `args` (one
/// try, two seconds).
pub fn ask(cmd: &str, addr: &str, port: &str, args: &[&str]) -> Dig {
    let at = format!("@{addr}");
    let once = if cmd == "kdig" { "+retry=0" } else { "+tries=1" };
    let base = [at.as_str(), "-p", port, "+nocookie", "+time=2", once];
    let text = run(cmd, &[&base[..], args].concat());
    let field = |start: &str| {
        text.split(start)
            .nth(1)
            .and_then(|r| r.split([',', ';']).next())
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    Dig {
        status: field("status: "),
        flags: field("lags: "),
        question: section(&text, "QUESTION").join(""),
        answers: section(&text, "ANSWER"),
        authority: section(&text, "AUTHORITY"),
        additional: section(&text, "ADDITIONAL")
            .into_iter()
            .filter(|l| !l.contains("OPT"))
            .collect(),
        text,
    }
}

/// Runs `cmd` (dig or kdig) against `server` with `args`, without RD.
pub fn dig_with(cmd: &str, server: &Server, args: &[&str]) -> Dig {
    ask(cmd, "127.0.0.1", &server.port(), &[&["+norecurse"][..], args].concat())
}

/// Runs dig against `server` with `args`.
pub fn dig(server: &Server, args: &[&str]) -> Dig {
    dig_with("dig", server, args)
}

/// Runs dig against `addr` port `port` with `args`.
pub fn dig_at(addr: &str, port: u16, args: &[&str]) -> Dig {
    ask("dig", addr, &port.to_string(), args)
}

/// `dig +short` at `server` from the source address `from` (one try, two
/// seconds, no cookie), `args` being the question and any flags: the
/// answer's data lines, trimmed.
pub fn short_from(server: &Server, from: &str, args: &[&str]) -> String {
    let port = server.port();
    let base = [
        "@127.0.0.1",
        "-p",
        &port,
        "-b",
        from,
        "+tries=1",
        "+time=2",
        "+nocookie",
        "+short",
    ];
    run("dig", &[&base[..], args].concat()).trim().to_string()
}
