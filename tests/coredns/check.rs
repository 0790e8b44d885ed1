//! `check` rows through `clusterdns check -conf`: every accepted snippet in
//! one Corefile (one server block each, one process for all of them), each
//! rejected snippet alone (an error in one must not hide or cause another's).
//! An accepted row the shared run refuses is tried alone before it fails.

use std::path::Path;
use std::process::Command;

use crate::table::Check;

/// One `check` run's outcome: accepted, or the error lines.
fn run(dir: &Path, name: &str, corefile: &[u8]) -> Result<Result<(), Vec<String>>, String> {
    let conf = dir.join(name);
    std::fs::write(&conf, corefile).map_err(|e| format!("write {}: {e}", conf.display()))?;
    let o = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .arg("check")
        .arg("-conf")
        .arg(&conf)
        .output()
        .map_err(|e| format!("run clusterdns check: {e}"))?;
    if o.status.success() {
        return Ok(Ok(()));
    }
    let text = String::from_utf8_lossy(&o.stderr).into_owned();
    Ok(Err(text.lines().map(String::from).collect()))
}

/// A snippet as a Corefile; returns it and the line range of the snippet.
fn wrap(c: &Check, first_line: usize) -> (String, std::ops::Range<usize>) {
    if c.whole {
        let n = c.snippet.lines().count();
        return (c.snippet.clone(), first_line..first_line + n);
    }
    let body: String = c.snippet.lines().map(|l| format!("    {l}\n")).collect();
    let n = body.lines().count();
    (format!(".:0 {{\n{body}}}\n"), first_line..first_line + n + 2)
}

/// The line number of a `FILE:LINE:COL: message` error of file `name`.
fn error_line(line: &str, name: &str) -> Option<usize> {
    let rest = &line[line.find(name)? + name.len()..];
    let mut parts = rest.strip_prefix(':')?.splitn(3, ':');
    let n = parts.next()?.parse().ok()?;
    parts.next()?.parse::<usize>().ok()?;
    Some(n)
}

/// Whether `line` is a `FILE:LINE:COL: message` error of any file.
fn located(line: &str) -> bool {
    let mut parts = line.split(':');
    parts.any(|p| p.parse::<usize>().is_ok()) && parts.next().is_some_and(|p| p.parse::<usize>().is_ok())
}

/// Whether a row's expectation holds for one outcome; `Err` says why not.
/// With `within`, only errors on those lines of file `name` count;
/// without, every located error does.
fn judge(
    c: &Check,
    outcome: &Result<(), Vec<String>>,
    name: &str,
    within: Option<&std::ops::Range<usize>>,
) -> Result<(), String> {
    let mine: Vec<&String> = match outcome {
        Ok(()) => Vec::new(),
        Err(errs) => errs
            .iter()
            .filter(|l| match within {
                Some(lines) => error_line(l, name).is_some_and(|n| lines.contains(&n)),
                None => located(l),
            })
            .collect(),
    };
    match (c.accept, mine.is_empty()) {
        (true, true) => Ok(()),
        (true, false) => Err(format!(
            "want accepted, got:\n      {}",
            mine.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n      ")
        )),
        (false, true) => Err(match outcome {
            Ok(()) => "want rejected, got accepted".into(),
            Err(all) => format!(
                "want rejected with FILE:LINE:COL errors, got:\n      {}",
                all.join("\n      ")
            ),
        }),
        (false, false) => match &c.error {
            Some(want) if !mine.iter().any(|l| l.to_lowercase().contains(&want.to_lowercase())) => Err(format!(
                "want an error containing '{want}', got:\n      {}",
                mine.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n      ")
            )),
            _ => Ok(()),
        },
    }
}

/// Runs every check row; returns (row, failure) for each that fails.
pub fn run_all<'a>(dir: &Path, checks: &'a [Check]) -> Result<Vec<(&'a Check, String)>, String> {
    let mut failures = Vec::new();
    let accepted: Vec<&Check> = checks.iter().filter(|c| c.accept && !c.whole).collect();
    let mut shared = String::new();
    let mut ranges = Vec::new();
    for c in &accepted {
        let first = shared.lines().count() + 1;
        let (text, range) = wrap(c, first);
        shared.push_str(&text);
        ranges.push(range);
    }
    let batch = if accepted.is_empty() {
        Ok(())
    } else {
        run(dir, "accept.Corefile", shared.as_bytes())?
    };
    for (c, range) in accepted.iter().zip(&ranges) {
        if judge(c, &batch, "accept.Corefile", Some(range)).is_ok() {
            continue;
        }
        if let Err(why) = alone(dir, c)? {
            failures.push((*c, why));
        }
    }
    for c in checks.iter().filter(|c| !c.accept || c.whole) {
        if let Err(why) = alone(dir, c)? {
            failures.push((c, why));
        }
    }
    Ok(failures)
}

fn alone(dir: &Path, c: &Check) -> Result<Result<(), String>, String> {
    let name = format!("check-{}.Corefile", c.line);
    let (text, _) = wrap(c, 1);
    let bytes = if c.bytes { unescape(&text) } else { text.into_bytes() };
    let outcome = run(dir, &name, &bytes)?;
    Ok(judge(c, &outcome, &name, None))
}

/// A `*-corefile-bytes` block's text with each `\xNN` as that byte (a
/// Corefile that is not UTF-8, as fuzzers write them).
fn unescape(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b.get(i + 2..i + 4).and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], b.get(i + 1), hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'\\', Some(b'x'), Some(v)) => {
                out.push(v);
                i += 4;
            }
            (c, ..) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}
