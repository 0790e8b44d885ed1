//! What a row asks of the running server besides its reply (README.md in
//! this folder): `log`/`no-log` lines it wrote while the row ran, `http`
//! GETs of its health/ready/metrics listeners, and `metric` series read
//! from `/metrics`. Counts a server updates after it replies are waited for
//! (2 s at most), as `asked` waits for an upstream.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::serve::Running;
use crate::table::{Http, Want};

/// `http ENDPOINT PATH STATUS [BODY]`.
pub fn http_line(rest: &str) -> Result<Http, String> {
    let mut words = rest.splitn(4, ' ');
    let (Some(endpoint), Some(path), Some(status)) = (words.next(), words.next(), words.next()) else {
        return Err("http needs ENDPOINT PATH STATUS [BODY]".into());
    };
    if !["health", "ready", "metrics"].contains(&endpoint) {
        return Err(format!("http: endpoint is health, ready or metrics, not '{endpoint}'"));
    }
    Ok(Http {
        endpoint: endpoint.into(),
        path: path.into(),
        status: status.parse().map_err(|_| format!("http: bad status '{status}'"))?,
        body: words.next().map(str::to_string),
    })
}

/// Every `log`, `no-log`, `http` and `metric` line of a row that does not
/// hold; `since` is how many log lines the server had written before it.
pub fn check(want: &Want, running: &Running, since: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (present, text) in &want.logs {
        let limit = if *present {
            crate::wire::HANG
        } else {
            Duration::from_millis(500)
        };
        let found = eventually(limit, *present, || {
            let lines = running.log.lock().map(|l| l.clone()).unwrap_or_default();
            lines.iter().skip(since).any(|l| contains(l, text))
        });
        if found != *present {
            let seen = running.log.lock().map(|l| l[since.min(l.len())..].join("\n    | "));
            let seen = seen.unwrap_or_default();
            let what = if *present {
                "no line contains"
            } else {
                "a line contains"
            };
            out.push(format!("log: {what} {text:?}; lines:\n    | {seen}"));
        }
    }
    for h in &want.http {
        match get(running, &h.endpoint, &h.path) {
            Err(e) => out.push(e),
            Ok((status, body)) => {
                if status != h.status || h.body.as_ref().is_some_and(|b| b.trim() != body.trim()) {
                    let want = format!("{} {}", h.status, h.body.as_deref().unwrap_or(""));
                    let body: String = body.chars().take(200).collect();
                    out.push(format!(
                        "http {} {}: want {want}, got {status} {body:?}",
                        h.endpoint, h.path
                    ));
                }
            }
        }
    }
    for (series, value) in &want.metrics {
        let mut got = String::new();
        eventually(crate::wire::HANG, true, || {
            got = match get(running, "metrics", "/metrics") {
                Ok((_, text)) => metric(&text, series),
                Err(e) => format!("error: {e}"),
            };
            got == *value || (value == "present" && got != "absent" && !got.starts_with("error: "))
        });
        if got != *value && (value != "present" || got == "absent" || got.starts_with("error: ")) {
            out.push(format!("metric {series}: want {value}, got {got}"));
        }
    }
    out
}

/// Polls `test` until it returns `until` or `limit` passes; its last result.
fn eventually(limit: Duration, until: bool, mut test: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let now = test();
        if now == until || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `line` contains `pattern`, each `*` in it matching any run.
pub fn contains(line: &str, pattern: &str) -> bool {
    let mut rest = line;
    for piece in pattern.split('*') {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

/// GET `path` of the listener `endpoint`: (status, body).
fn get(running: &Running, endpoint: &str, path: &str) -> Result<(u16, String), String> {
    // A listener shared with `ready` is logged just after it: waited for.
    let logged = format!("listening on {endpoint} http://");
    let mut addr: Option<SocketAddr> = None;
    eventually(crate::wire::HANG, true, || {
        let lines = running.log.lock().map(|l| l.clone()).unwrap_or_default();
        addr = lines.iter().find_map(|l| l.split(&logged).nth(1)?.trim().parse().ok());
        addr.is_some()
    });
    let addr = addr.ok_or_else(|| format!("http: the server logged no {endpoint} listener"))?;
    let text = crate::common::http_get(addr, path);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok());
    let status = status.ok_or_else(|| format!("http {endpoint} {path}: no HTTP reply: {text:?}"))?;
    Ok((status, body.to_string()))
}

/// The sum of the series of `want`'s name whose labels include every label
/// `want` names (`name{a="b"}`), as text; `absent` when none matches (a
/// row's `present` accepts any sum).
fn metric(text: &str, want: &str) -> String {
    let (name, labels) = split_series(want);
    let values: Vec<f64> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (n, have) = split_series(series);
            (n == name && labels.iter().all(|l| have.contains(l))).then(|| value.parse().ok())?
        })
        .collect();
    match values.is_empty() {
        true => "absent".into(),
        false => format!("{}", values.iter().sum::<f64>()),
    }
}

/// `name{k="v",...}` → (name, ["k=\"v\"", ...]), quotes and escapes kept.
fn split_series(series: &str) -> (&str, Vec<String>) {
    let Some((name, rest)) = series.split_once('{') else {
        return (series.trim(), Vec::new());
    };
    let inner = rest.trim_end().strip_suffix('}').unwrap_or(rest);
    let (mut labels, mut cur, mut quoted, mut escaped) = (Vec::new(), String::new(), false, false);
    for c in inner.chars() {
        match c {
            ',' if !quoted => labels.push(std::mem::take(&mut cur)),
            _ => {
                cur.push(c);
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    quoted = !quoted;
                }
            }
        }
    }
    labels.push(cur);
    labels.retain(|l| !l.trim().is_empty());
    (name.trim(), labels.into_iter().map(|l| l.trim().to_string()).collect())
}
