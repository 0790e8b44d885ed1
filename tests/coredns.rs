//! CoreDNS's own plugin test tables, converted to data (`tests/coredns/*.table`,
//! format in `tests/coredns/README.md`) and run against the real binary:
//! one server per Corefile of a table, queries sent from this process over
//! UDP/TCP, `check` rows through `clusterdns check`. Tables run in parallel
//! threads; a table with `from` addresses runs in its own network namespace.
//! Every mismatch is reported as `FILE:LINE: CASE: want vs got`.
//!
//! `COREDNS_TABLE=chaos cargo test --test coredns` runs the tables whose file
//! name contains `chaos`.

#[path = "coredns/case.rs"]
mod case;
#[path = "coredns/check.rs"]
mod check;
mod common;
#[path = "coredns/dnssec.rs"]
mod dnssec;
#[path = "coredns/etcd.rs"]
mod etcd;
#[path = "coredns/observe.rs"]
mod observe;
#[path = "coredns/records.rs"]
mod records;
#[path = "coredns/serve.rs"]
mod serve;
#[path = "coredns/table.rs"]
mod table;
#[path = "coredns/upstream.rs"]
mod upstream;
#[path = "coredns/wire.rs"]
mod wire;

use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// What one table file came to.
#[derive(Default)]
struct Outcome {
    rows: usize,
    differs: usize,
    /// Rows marked `gap:` that still fail as recorded.
    gaps: usize,
    failures: Vec<String>,
    /// Why the table could not run here (outside CI only).
    skipped: Option<String>,
    /// A row of a timeline (a server block with `wait` and `ttl-slack` rows) asked later
    /// than its waits add up to, by more than [`LATE`]: what it expects of
    /// TTLs did not get its chance, so the run says nothing (see
    /// [`run_table_on_time`]).
    late: Option<String>,
}

/// How far behind its timeline a row may be asked.
const LATE: std::time::Duration = std::time::Duration::from_millis(500);
/// Runs of a table whose timeline slipped, before it fails.
const RUNS: usize = 5;

/// The table's etcd with its keys written, when it has an `etcd` block.
fn seed(dir: &Path, lines: &[(usize, String)]) -> Result<Option<etcd::Etcd>, String> {
    if lines.is_empty() {
        return Ok(None);
    }
    if !etcd::installed("etcd") || !etcd::installed("etcdctl") {
        return Err("etcd and etcdctl are not installed (apt-get install etcd-server etcd-client)".into());
    }
    etcd::Etcd::start(dir, lines).map(Some)
}

/// [`run_table`] again (a fresh server) while a row was asked too late for
/// its timeline, at most [`RUNS`] times: a busy machine can delay a row,
/// and then its TTLs and prefetches are not what the table is about. A run
/// on time is judged as it is; no run on time fails, saying so.
fn run_table_on_time(file: &Path, tag: &str) -> Outcome {
    let mut o = run_table(file, tag);
    for run in 2..=RUNS {
        let Some(late) = &o.late else { return o };
        eprintln!("{}: run {} slipped ({late}); again", file.display(), run - 1);
        o = run_table(file, &format!("{tag}r{run}"));
    }
    if let Some(late) = o.late.take() {
        o.failures.push(format!(
            "{}: no run of {RUNS} kept its timeline: {late}",
            file.display()
        ));
    }
    o
}

fn tables() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/coredns");
    let filter = std::env::var("COREDNS_TABLE").unwrap_or_default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| {
        p.extension().is_some_and(|e| e == "table")
            && p.file_name().is_some_and(|n| n.to_string_lossy().contains(&filter))
    });
    files.sort();
    files
}

#[test]
fn coredns_tables() {
    let files = tables();
    assert!(
        !files.is_empty(),
        "no tests/coredns/*.table files (COREDNS_TABLE filter?)"
    );
    // At most 4 tables at once: each starts a server.
    let mut outcomes = Vec::new();
    for chunk in files.chunks(4) {
        let handles: Vec<_> = chunk
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let f = f.clone();
                let tag = format!("cdt{}x{}", std::process::id() % 100000, outcomes.len() + i);
                std::thread::spawn(move || run_table_on_time(&f, &tag))
            })
            .collect();
        for (f, h) in chunk.iter().zip(handles) {
            let o = h.join().unwrap_or_else(|_| Outcome {
                failures: vec!["runner panicked".into()],
                ..Outcome::default()
            });
            outcomes.push((f.clone(), o));
        }
    }
    let mut failed = Vec::new();
    for (f, o) in &outcomes {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match &o.skipped {
            Some(why) => eprintln!("SKIP {name}: {why}"),
            None => eprintln!(
                "{name}: {} rows, {} pass, {} documented differences, {} known gaps",
                o.rows,
                o.rows.saturating_sub(o.failures.len() + o.gaps),
                o.differs,
                o.gaps
            ),
        }
        failed.extend(o.failures.iter().cloned());
    }
    assert!(
        failed.is_empty(),
        "{} row(s) failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// Runs one table in this thread (which may enter a namespace).
fn run_table(file: &Path, tag: &str) -> Outcome {
    let shown = format!(
        "tests/coredns/{}",
        file.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    let mut o = Outcome::default();
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            return Outcome {
                failures: vec![format!("{shown}: {e}")],
                ..o
            }
        }
    };
    let t = match table::parse(&text) {
        Ok(t) => t,
        Err(e) => {
            return Outcome {
                failures: vec![format!("{shown}:{e}")],
                ..o
            }
        }
    };
    o.rows = t.checks.len() + t.servers.iter().map(|s| s.cases.len()).sum::<usize>();
    o.differs = t.checks.iter().filter(|c| c.differs.is_some()).count()
        + t.servers
            .iter()
            .flat_map(|s| &s.cases)
            .filter(|c| c.differs.is_some())
            .count();
    if t.sources.is_empty() {
        o.failures
            .push(format!("{shown}:1: no 'source' line naming the Go test"));
    }
    let fail =
        |o: &mut Outcome, line: usize, name: &str, why: &str| o.failures.push(format!("{shown}:{line}: {name}: {why}"));
    let dir = std::env::temp_dir().join(format!("clusterdns-{tag}"));
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        fail(&mut o, 1, "setup", &e.to_string());
        return o;
    }
    let froms: Vec<IpAddr> = t
        .servers
        .iter()
        .flat_map(|s| &s.cases)
        .filter_map(|c| c.query.from)
        .collect();
    let _netns = if froms.is_empty() {
        None
    } else {
        match serve::Netns::enter(tag) {
            Ok(ns) => {
                if let Err(e) = ns.addresses(&froms) {
                    fail(&mut o, 1, "setup", &e);
                    return o;
                }
                Some(ns)
            }
            Err(e) if std::env::var_os("CI").is_none() => {
                o.skipped = Some(format!(
                    "cannot create a network namespace ({e}); run as root with iproute2"
                ));
                return o;
            }
            Err(e) => {
                fail(
                    &mut o,
                    1,
                    "setup",
                    &format!("{e} (CI needs root and iproute2 for tables with 'from')"),
                );
                return o;
            }
        }
    };
    let v6 = froms.iter().any(IpAddr::is_ipv6);
    let bind: Vec<IpAddr> = if v6 {
        vec![[127, 0, 0, 1].into(), [0u16, 0, 0, 0, 0, 0, 0, 1].into()]
    } else {
        vec![[127, 0, 0, 1].into()]
    };
    let mut upstreams = Vec::new();
    for (name, lines) in &t.upstreams {
        match upstream::Upstream::start(bind[0], lines) {
            Ok(u) => upstreams.push((name.clone(), u)),
            Err(e) => fail(
                &mut o,
                lines.first().map_or(1, |l| l.0),
                &format!("upstream {name}"),
                &e,
            ),
        }
    }
    let seeded = match seed(&dir, &t.etcd) {
        Ok(e) => e,
        Err(why) if std::env::var_os("CI").is_none() && !etcd::installed("etcd") => {
            o.skipped = Some(why);
            return o;
        }
        Err(why) => {
            fail(&mut o, t.etcd.first().map_or(1, |l| l.0), "etcd", &why);
            return o;
        }
    };
    let fill = |text: &str| {
        let mut text = text.replace("{dir}", &dir.display().to_string());
        if let Some(e) = &seeded {
            text = text.replace("{etcd}", &e.endpoint);
        }
        for (name, u) in &upstreams {
            text = text.replace(&format!("{{upstream:{name}}}"), &u.addr.to_string());
            text = text.replace(&format!("{{port:{name}}}"), &u.addr.port().to_string());
        }
        text
    };
    for name in &t.certificates {
        common::certs::ca(&dir, name, "localhost");
        if let Err(e) = std::fs::rename(dir.join(format!("{name}.pem")), dir.join(format!("{name}.crt"))) {
            fail(&mut o, 1, name, &e.to_string());
        }
    }
    for (name, kind) in &t.mmdbs {
        if let Err(why) = common::mmdb::python() {
            if std::env::var_os("CI").is_none() {
                o.skipped = Some(format!("{why} ({})", common::mmdb::INSTALL));
                return o;
            }
        }
        if let Err(e) = common::mmdb::write(kind, &dir.join(name)) {
            fail(&mut o, 1, name, &e);
        }
    }
    for (name, body) in &t.files {
        if let Err(e) = std::fs::write(dir.join(name), fill(body)) {
            fail(&mut o, 1, name, &e.to_string());
        }
    }
    for s in &t.servers {
        run_server(&shown, &dir, s, (&bind, &upstreams), &fill(&s.corefile), &mut o);
    }
    let checks: Vec<table::Check> = t
        .checks
        .iter()
        .map(|c| table::Check {
            snippet: fill(&c.snippet),
            ..c.clone()
        })
        .collect();
    match check::run_all(&dir, &checks) {
        Ok(fails) => {
            for c in &checks {
                let why = fails
                    .iter()
                    .find(|(f, _)| f.line == c.line)
                    .map(|(_, w)| format!(": {w}"));
                judge(&mut o, &shown, c.line, &c.name, c.gap.as_deref(), why.as_deref());
            }
        }
        Err(e) => fail(&mut o, 1, "check", &e),
    }
    if o.failures.is_empty() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    o
}

/// Starts one Corefile and asks every case of it.
fn run_server(
    shown: &str,
    dir: &Path,
    s: &table::Server,
    (bind, upstreams): (&[IpAddr], &[(String, upstream::Upstream)]),
    corefile: &str,
    o: &mut Outcome,
) {
    let (text, added) = serve::rewrite(corefile, bind);
    let conf = dir.join(format!("Corefile.{}", s.line));
    if let Err(e) = std::fs::write(&conf, &text) {
        o.failures.push(format!("{shown}:{}: Corefile: {e}", s.line));
        return;
    }
    let running = match serve::start(&conf, if added { bind.len() } else { 1 }, !s.unready) {
        Ok(r) => r,
        Err(e) => {
            for c in &s.cases {
                judge(o, shown, c.line, &c.name, c.gap.as_deref(), Some(&format!(": {e}")));
            }
            return;
        }
    };
    // A timeline: rows that wait for TTLs to pass and read what is left of
    // them (`wait` and `ttl-slack` rows), judged only when each was asked
    // no later than its waits add up to (plus LATE).
    let timeline = s.cases.iter().any(|c| !c.want.wait.is_zero()) && s.cases.iter().any(|c| c.want.ttl_slack > 0);
    let (started, mut planned) = (std::time::Instant::now(), std::time::Duration::ZERO);
    for c in &s.cases {
        let Some(to) = running.target(c.query.from) else {
            o.failures.push(format!(
                "{shown}:{}: {}: no listener for a client at {:?}",
                c.line, c.name, c.query.from
            ));
            continue;
        };
        if let Some((name, with)) = &c.replace {
            let done = match with {
                Some(with) => std::fs::copy(dir.join(with), dir.join(name)).map(drop),
                None => std::fs::remove_file(dir.join(name)),
            };
            if let Err(e) = done {
                o.failures
                    .push(format!("{shown}:{}: {}: replace {name}: {e}", c.line, c.name));
                continue;
            }
        }
        let since = running.log.lock().map_or(0, |l| l.len());
        std::thread::sleep(c.want.wait);
        planned += c.want.wait;
        let behind = started.elapsed().saturating_sub(planned);
        if timeline && behind > LATE && o.late.is_none() {
            o.late = Some(format!("{shown}:{}: {} asked {behind:?} behind", c.line, c.name));
        }
        let mut problems = ask_until(c, to);
        problems.extend(asked(&c.query, &c.want, upstreams));
        problems.extend(observe::check(&c.want, &running, since));
        let why = c
            .differs
            .as_ref()
            .map_or(String::new(), |d| format!(" (differs on purpose: {d})"));
        let problems = (!problems.is_empty()).then(|| format!("{why}:\n    {}", problems.join("\n    ")));
        judge(o, shown, c.line, &c.name, c.gap.as_deref(), problems.as_deref());
    }
}

/// What is wrong with the reply to case `c`: asked once, or with `until`
/// again every 100 ms until nothing is (the last reply judged). `until N`
/// says the row waits for a change; N is what an idle machine needs, the
/// ceiling is [`wire::HANG`].
fn ask_until(c: &table::Case, to: std::net::SocketAddr) -> Vec<String> {
    let until = if c.want.until.is_zero() {
        c.want.until
    } else {
        c.want.until.max(wire::HANG)
    };
    let deadline = std::time::Instant::now() + until;
    loop {
        let problems = match wire::ask(&c.query, to, wire::wait_for(&c.want)) {
            Ok(reply) => wire::compare(&c.want, reply.as_ref()),
            Err(e) => vec![e],
        };
        if problems.is_empty() || std::time::Instant::now() >= deadline {
            return problems;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Every `asked UPSTREAM N` of a row that does not hold; `A+B` sums the
/// requests of several upstreams (any one of them may be asked).
fn asked(q: &table::Query, want: &table::Want, upstreams: &[(String, upstream::Upstream)]) -> Vec<String> {
    let mut out = Vec::new();
    for a in &want.asked {
        let qtype = a.qtype.as_deref().unwrap_or(&q.qtype);
        let qname = a.name.as_deref().unwrap_or(&q.name);
        let ups: Vec<Option<&upstream::Upstream>> = a
            .upstream
            .split('+')
            .map(|n| upstreams.iter().find(|(u, _)| u == n).map(|(_, u)| u))
            .collect();
        if ups.iter().any(Option::is_none) {
            out.push(format!("asked: no upstream '{}'", a.upstream));
            continue;
        }
        // Only the last one waits (up to 2 s) for what is still missing.
        let (last, rest) = (ups.len() - 1, ups.into_iter().flatten());
        let mut got = 0;
        for (i, u) in rest.enumerate() {
            let wait = if i == last { a.n.saturating_sub(got) } else { 0 };
            got += u.asked(qname, qtype, a.rd, wait);
        }
        if got != a.n {
            out.push(format!(
                "asked {}: want {} requests for {qname} {qtype}, got {got}",
                a.upstream, a.n
            ));
        }
    }
    out
}

/// Records one row's result: a failure, a known gap that still fails as
/// recorded, or a `gap:` row that now passes (a failure too, until the
/// marker is removed, so the tables never understate what works).
fn judge(o: &mut Outcome, shown: &str, line: usize, name: &str, gap: Option<&str>, failed: Option<&str>) {
    match (gap, failed) {
        (None, None) => {}
        (None, Some(why)) => o.failures.push(format!("{shown}:{line}: {name}{why}")),
        (Some(_), Some(_)) => o.gaps += 1,
        (Some(gap), None) => o.failures.push(format!(
            "{shown}:{line}: {name}: passes now; remove its 'gap: {gap}' line"
        )),
    }
}
