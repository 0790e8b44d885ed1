//! The `.table` format (README.md in this folder): a line-oriented file of
//! sections (`source`, `corefile <<`, `file NAME <<`, `upstream NAME <<`,
//! `etcd <<`, `certificate NAME`, `mmdb NAME KIND`)
//! and rows (`case NAME` with a query and expectations, `check NAME` with an
//! accept/reject snippet). Parsing keeps every row's line for reports.

use std::net::IpAddr;

/// One parsed `.table` file.
#[derive(Debug, Default)]
pub struct Table {
    pub sources: Vec<String>,
    /// Auxiliary files written beside the Corefile: (name, text).
    pub files: Vec<(String, String)>,
    /// `certificate NAME`: a self-signed certificate for localhost made at
    /// run time, `NAME.crt` and `NAME.key` beside the Corefile.
    pub certificates: Vec<String>,
    /// `mmdb NAME KIND`: a MaxMind DB written at run time (`common::mmdb`).
    pub mmdbs: Vec<(String, String)>,
    /// Canned upstreams: (name, lines with their line numbers).
    pub upstreams: Vec<(String, Vec<(usize, String)>)>,
    /// `etcd <<`: keys and values written into a real etcd (line numbers kept).
    pub etcd: Vec<(usize, String)>,
    pub servers: Vec<Server>,
    pub checks: Vec<Check>,
}

/// One Corefile and the cases asked of it.
#[derive(Debug, Default)]
pub struct Server {
    pub line: usize,
    pub corefile: String,
    /// `corefile unready <<`: asked without waiting for `/ready` (a
    /// cluster source that never syncs).
    pub unready: bool,
    pub cases: Vec<Case>,
}

/// `case NAME`: one query and what the reply must be.
#[derive(Debug, Clone)]
pub struct Case {
    pub line: usize,
    pub name: String,
    pub query: Query,
    pub want: Want,
    pub differs: Option<String>,
    /// `gap: REASON`: clusterdns does not do this yet; the row must still
    /// fail (a row that passes fails the run until the marker goes).
    pub gap: Option<String>,
    /// `replace NAME WITH`: before the query, table file WITH's text is
    /// written over file NAME (a zone file changed while the server runs);
    /// `remove NAME` (no WITH): file NAME is deleted.
    pub replace: Option<(String, Option<String>)>,
}

#[derive(Debug, Clone)]
pub struct Query {
    pub name: String,
    pub qtype: String,
    pub class: String,
    pub tcp: bool,
    pub from: Option<IpAddr>,
    /// `Some(size)`: an OPT record with this payload size.
    pub edns: Option<u16>,
    pub dnssec_ok: bool,
    pub rd: bool,
    pub cd: bool,
    /// `ad`: the AD bit set in the query (RFC 6840 5.7).
    pub ad: bool,
    /// `aa`: the AA bit set in the query (meaningless; servers ignore it).
    pub aa: bool,
    /// `nsid`: an empty NSID option in the OPT record (RFC 5001).
    pub nsid: bool,
    /// `subnet CIDR`: an EDNS Client Subnet option (RFC 7871) for CIDR.
    pub subnet: Option<String>,
    /// `serial N`: an SOA with this serial in the authority section (the
    /// serial an IXFR says the client holds).
    pub serial: Option<u32>,
}

impl Query {
    /// A question for `name` as a row's `query` line starts it: A, IN,
    /// UDP, no EDNS, RD set.
    pub fn named(name: String) -> Query {
        Query {
            name,
            qtype: "A".into(),
            class: "IN".into(),
            tcp: false,
            from: None,
            edns: None,
            dnssec_ok: false,
            rd: true,
            cd: false,
            ad: false,
            aa: false,
            nsid: false,
            subnet: None,
            serial: None,
        }
    }
}

/// Expectations; a section is `None` when the row says `ignore SECTION`.
#[derive(Debug, Clone)]
pub struct Want {
    pub rcode: String,
    /// (flag, set?) for every flag the row names.
    pub flags: Vec<(String, bool)>,
    pub answer: Option<Vec<String>>,
    pub ns: Option<Vec<String>>,
    pub extra: Option<Vec<String>>,
    pub ordered: bool,
    /// `ordered types`: sorted compare, and the record types in the written order.
    pub types: bool,
    /// `Some(None)`: no EDE option; `Some(Some(code))`: that info code.
    pub ede: Option<Option<u16>>,
    /// `Some(None)`: no NSID option; `Some(Some(text))`: that NSID.
    pub nsid: Option<Option<String>>,
    pub no_reply: bool,
    /// `asked UPSTREAM N [TYPE [NAME [rd|nord]]]`: that upstream has seen N
    /// requests for the query's name and type (or TYPE, NAME; with RD set or
    /// clear when given) once the reply is in.
    pub asked: Vec<Asked>,
    /// `ttl-slack N`: a TTL may be up to N below the written one (a reply
    /// from a cache that aged while the table ran).
    pub ttl_slack: u32,
    /// `wait SECONDS` (at most 5): a pause before the query, for a cached
    /// entry to expire (its TTL is a whole second or two; the pause only
    /// needs to be longer, never to end in time).
    pub wait: std::time::Duration,
    /// `opt none` / `opt SIZE|* [do|-do]`: the reply's OPT record.
    pub opt: Option<Opt>,
    /// `question NAME TYPE`: the reply's question, as text.
    pub question: Option<String>,
    /// `until SECONDS` (at most 10): the query is asked again every 100 ms
    /// until the reply matches, for at most this long (a reload to land).
    pub until: std::time::Duration,
    /// `log TEXT` (true) / `no-log TEXT` (false): a server log line written
    /// while the row ran does (not) contain TEXT (`*` matches any run).
    pub logs: Vec<(bool, String)>,
    /// `http ENDPOINT PATH STATUS [BODY]`: a GET after the reply.
    pub http: Vec<Http>,
    /// `metric SERIES VALUE`: the sum of the series on `/metrics` that match.
    pub metrics: Vec<(String, String)>,
}

/// What a reply's OPT record must be: absent, or present with this payload
/// size (any when `None`) and DO bit (either when `None`).
#[derive(Debug, Clone, PartialEq)]
pub struct Opt {
    pub present: bool,
    pub size: Option<u16>,
    pub dnssec_ok: Option<bool>,
}

/// One `asked` line: upstream, count, and what the counted requests ask.
#[derive(Debug, Clone)]
pub struct Asked {
    pub upstream: String,
    pub n: usize,
    pub qtype: Option<String>,
    pub name: Option<String>,
    /// `Some(true)`: only requests with RD set; `Some(false)`: RD clear.
    pub rd: Option<bool>,
}

/// One `http` line of a case.
#[derive(Debug, Clone)]
pub struct Http {
    /// `health`, `ready` or `metrics`: the listener the server logged.
    pub endpoint: String,
    pub path: String,
    pub status: u16,
    pub body: Option<String>,
}

impl Default for Want {
    fn default() -> Self {
        Want {
            rcode: "NOERROR".into(),
            flags: Vec::new(),
            answer: Some(Vec::new()),
            ns: Some(Vec::new()),
            extra: Some(Vec::new()),
            ordered: false,
            types: false,
            ede: None,
            nsid: None,
            no_reply: false,
            asked: Vec::new(),
            ttl_slack: 0,
            wait: std::time::Duration::ZERO,
            opt: None,
            question: None,
            until: std::time::Duration::ZERO,
            logs: Vec::new(),
            http: Vec::new(),
            metrics: Vec::new(),
        }
    }
}

/// `check NAME`: a snippet `clusterdns check` must accept or reject.
#[derive(Debug, Clone)]
pub struct Check {
    pub line: usize,
    pub name: String,
    pub accept: bool,
    /// The snippet is a whole Corefile (`accept-corefile`), not a directive.
    pub whole: bool,
    /// `*-corefile-bytes`: `\xNN` in the block is written as that byte.
    pub bytes: bool,
    pub snippet: String,
    pub error: Option<String>,
    pub differs: Option<String>,
    /// As [`Case::gap`].
    pub gap: Option<String>,
}

/// Reads `<<` blocks: the lines after `at` up to a line `>>`.
fn block(lines: &[&str], at: &mut usize, start: usize) -> Result<String, String> {
    let mut text = String::new();
    while *at < lines.len() {
        let line = lines[*at];
        *at += 1;
        if line.trim() == ">>" {
            return Ok(text);
        }
        text.push_str(line);
        text.push('\n');
    }
    Err(format!("{start}: '<<' block not closed with '>>'"))
}

/// Parses a table; errors are `LINE: message`.
pub fn parse(text: &str) -> Result<Table, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut t = Table::default();
    let mut at = 0;
    // The row being filled: a case or a check.
    let mut row: Option<Row> = None;
    while at < lines.len() {
        let n = at + 1;
        let line = lines[at].trim();
        at += 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        let here = |e: String| format!("{n}: {e}");
        match word {
            "source" => t.sources.push(rest.to_string()),
            "certificate" => t.certificates.push(rest.to_string()),
            "mmdb" => match rest.split_whitespace().collect::<Vec<_>>()[..] {
                [name, kind] => t.mmdbs.push((name.to_string(), kind.to_string())),
                _ => return Err(here("mmdb takes NAME KIND".into())),
            },
            "corefile" | "file" | "upstream" | "etcd" => {
                finish(&mut t, row.take()).map_err(here)?;
                let name = rest
                    .strip_suffix("<<")
                    .map(str::trim)
                    .ok_or_else(|| here(format!("{word} needs '<<'")))?;
                let body = block(&lines, &mut at, n)?;
                match word {
                    "corefile" if matches!(name, "" | "unready") => t.servers.push(Server {
                        line: n,
                        corefile: body,
                        unready: name == "unready",
                        cases: Vec::new(),
                    }),
                    "corefile" => return Err(here(format!("corefile '{name}': only 'unready' may follow"))),
                    "file" => t.files.push((name.to_string(), body)),
                    _ => {
                        let first = n + 1;
                        let body = body
                            .lines()
                            .enumerate()
                            .map(|(i, l)| (first + i, l.to_string()))
                            .collect();
                        if word == "etcd" {
                            t.etcd = body;
                        } else {
                            t.upstreams.push((name.to_string(), body));
                        }
                    }
                }
            }
            "case" | "check" => {
                finish(&mut t, row.take()).map_err(here)?;
                row = Some(Row::new(word == "case", n, rest));
            }
            _ => {
                let r = row
                    .as_mut()
                    .ok_or_else(|| here(format!("'{word}' outside a case or check")))?;
                let snippet = if rest.ends_with("<<")
                    && matches!(
                        word,
                        "accept"
                            | "reject"
                            | "accept-corefile"
                            | "reject-corefile"
                            | "accept-corefile-bytes"
                            | "reject-corefile-bytes"
                    ) {
                    Some(block(&lines, &mut at, n)?)
                } else {
                    None
                };
                r.line(word, rest, snippet).map_err(here)?;
            }
        }
    }
    finish(&mut t, row.take()).map_err(|e| format!("{}: {e}", lines.len()))?;
    Ok(t)
}

/// A row being read.
enum Row {
    Case(Box<Case>, bool),
    Check(Check, bool),
}

impl Row {
    fn new(case: bool, line: usize, name: &str) -> Row {
        if case {
            let query = Query::named(String::new());
            Row::Case(
                Box::new(Case {
                    line,
                    name: name.into(),
                    query,
                    want: Want::default(),
                    differs: None,
                    gap: None,
                    replace: None,
                }),
                false,
            )
        } else {
            let check = Check {
                line,
                name: name.into(),
                accept: true,
                whole: false,
                bytes: false,
                snippet: String::new(),
                error: None,
                differs: None,
                gap: None,
            };
            Row::Check(check, false)
        }
    }

    /// Applies one line of a row.
    fn line(&mut self, word: &str, rest: &str, block: Option<String>) -> Result<(), String> {
        if let Some(reason) = word.strip_prefix("gap:").map(|r| format!("{r} {rest}")) {
            let reason = reason.trim().to_string();
            if reason.is_empty() {
                return Err("'gap:' needs a reason".into());
            }
            match self {
                Row::Case(c, _) => c.gap = Some(reason),
                Row::Check(c, _) => c.gap = Some(reason),
            }
            return Ok(());
        }
        if let Some(reason) = word.strip_prefix("differs:").map(|r| format!("{r} {rest}")) {
            let reason = reason.trim().to_string();
            if reason.is_empty() {
                return Err("'differs:' needs a reason".into());
            }
            match self {
                Row::Case(c, _) => {
                    c.differs = Some(reason);
                    c.want = Want::default();
                }
                Row::Check(c, seen) => {
                    c.differs = Some(reason);
                    *seen = false;
                }
            }
            return Ok(());
        }
        match self {
            Row::Case(c, has_query) => crate::case::case_line(c, has_query, word, rest),
            Row::Check(c, seen) => {
                match word {
                    "accept"
                    | "reject"
                    | "accept-corefile"
                    | "reject-corefile"
                    | "accept-corefile-bytes"
                    | "reject-corefile-bytes" => {
                        c.accept = word.starts_with("accept");
                        c.whole = word.contains("-corefile");
                        c.bytes = word.ends_with("-bytes");
                        c.snippet = block.unwrap_or_else(|| rest.to_string());
                        c.error = None;
                        *seen = true;
                    }
                    "error" => c.error = Some(rest.to_string()),
                    _ => return Err(format!("unknown check line '{word}'")),
                }
                Ok(())
            }
        }
    }
}

/// Files a finished row into the table.
fn finish(t: &mut Table, row: Option<Row>) -> Result<(), String> {
    match row {
        None => Ok(()),
        Some(Row::Case(c, has_query)) => {
            if !has_query {
                return Err(format!("case '{}' (line {}) has no query", c.name, c.line));
            }
            let server = t
                .servers
                .last_mut()
                .ok_or_else(|| format!("case '{}' before any corefile", c.name))?;
            server.cases.push(*c);
            Ok(())
        }
        Some(Row::Check(c, seen)) => {
            if !seen {
                return Err(format!(
                    "check '{}' (line {}) has no accept/reject line",
                    c.name, c.line
                ));
            }
            t.checks.push(c);
            Ok(())
        }
    }
}
