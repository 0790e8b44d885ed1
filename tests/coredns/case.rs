//! The lines of a `case` row (README.md in this folder): the query, then
//! what the reply must be (rcode, flags, sections, EDE, silence) and what
//! the canned upstreams must have seen (`asked`), with the pauses and TTL
//! slack a cache's rows need.

use crate::table::{Case, Query};

pub fn case_line(c: &mut Case, has_query: &mut bool, word: &str, rest: &str) -> Result<(), String> {
    if word == "replace" {
        let (name, with) = rest.split_once(' ').ok_or("replace needs NAME WITH")?;
        c.replace = Some((name.to_string(), Some(with.trim().to_string())));
        return Ok(());
    }
    if word == "remove" {
        c.replace = Some((rest.to_string(), None));
        return Ok(());
    }
    let w = &mut c.want;
    match (word, rest) {
        ("query", _) => {
            c.query = query(rest)?;
            *has_query = true;
        }
        ("rcode", _) => w.rcode = rest.to_ascii_uppercase(),
        ("flags", _) => {
            for f in rest.split_whitespace() {
                let (set, name) = f.strip_prefix('-').map_or((true, f), |n| (false, n));
                if !["qr", "aa", "tc", "rd", "ra", "ad", "cd"].contains(&name) {
                    return Err(format!("unknown flag '{name}'"));
                }
                w.flags.push((name.to_string(), set));
            }
        }
        ("answer" | "ns" | "extra", _) => {
            // Types the runner does not parse compare as text (README), as
            // do records with `*` fields (any value there).
            if let Err(e) = crate::records::parse(rest) {
                if !e.contains("not supported in tables") && !rest.split_whitespace().any(|f| f == "*") {
                    return Err(format!("{word}: {e}"));
                }
            }
            let section = match word {
                "answer" => &mut w.answer,
                "ns" => &mut w.ns,
                _ => &mut w.extra,
            };
            section.get_or_insert_with(Vec::new).push(rest.to_string());
        }
        ("ignore", _) => {
            for s in rest.split_whitespace() {
                match s {
                    "answer" => w.answer = None,
                    "ns" => w.ns = None,
                    "extra" => w.extra = None,
                    _ => return Err(format!("ignore takes answer, ns or extra, not '{s}'")),
                }
            }
        }
        ("ordered", "") => w.ordered = true,
        ("ordered", "types") => w.types = true,
        ("asked", _) => {
            let words: Vec<&str> = rest.split_whitespace().collect();
            let [up, n, only @ ..] = words.as_slice() else {
                return Err("asked needs UPSTREAM COUNT [TYPE [NAME [rd|nord]]]".into());
            };
            let n = n.parse().map_err(|_| format!("bad asked count '{n}'"))?;
            let rd = match only.get(2) {
                None => None,
                Some(&"rd") => Some(true),
                Some(&"nord") => Some(false),
                Some(w) => return Err(format!("asked: rd or nord, not '{w}'")),
            };
            w.asked.push(crate::table::Asked {
                upstream: up.to_string(),
                n,
                qtype: only.first().map(|t| t.to_ascii_uppercase()),
                name: only.get(1).map(|s| s.to_string()),
                rd,
            });
        }
        ("wait", n) => {
            let secs: f64 = n.parse().map_err(|_| format!("bad wait '{n}'"))?;
            if !(0.0..=5.0).contains(&secs) {
                return Err(format!("wait {n}: at most 5 seconds"));
            }
            w.wait = std::time::Duration::from_secs_f64(secs);
        }
        ("opt", _) => w.opt = Some(opt(rest)?),
        ("question", _) => w.question = Some(rest.split_whitespace().collect::<Vec<_>>().join(" ")),
        ("until", n) => {
            let secs: f64 = n.parse().map_err(|_| format!("bad until '{n}'"))?;
            if !(0.0..=10.0).contains(&secs) {
                return Err(format!("until {n}: at most 10 seconds"));
            }
            w.until = std::time::Duration::from_secs_f64(secs);
        }
        ("ttl-slack", n) => w.ttl_slack = n.parse().map_err(|_| format!("bad ttl-slack '{n}'"))?,
        ("no", "reply") => w.no_reply = true,
        ("log" | "no-log", text) if !text.is_empty() => w.logs.push((word == "log", text.to_string())),
        ("http", _) => w.http.push(crate::observe::http_line(rest)?),
        ("metric", _) => {
            let (series, value) = rest.rsplit_once(' ').ok_or("metric needs SERIES VALUE")?;
            w.metrics.push((series.trim().to_string(), value.to_string()));
        }
        ("nsid", "none") => w.nsid = Some(None),
        ("nsid", text) if !text.is_empty() => w.nsid = Some(Some(text.to_string())),
        ("ede", "none") => w.ede = Some(None),
        ("ede", code) => w.ede = Some(Some(code.parse().map_err(|_| format!("bad EDE code '{code}'"))?)),
        _ => return Err(format!("unknown case line '{word} {rest}'")),
    }
    Ok(())
}

/// `none` or `SIZE|* [do|-do]`.
fn opt(rest: &str) -> Result<crate::table::Opt, String> {
    let mut words = rest.split_whitespace();
    let size = match words.next() {
        Some("none") => {
            return Ok(crate::table::Opt {
                present: false,
                size: None,
                dnssec_ok: None,
            })
        }
        Some("*") => None,
        Some(n) => Some(n.parse().map_err(|_| format!("bad opt size '{n}'"))?),
        None => return Err("opt needs none, a size or *".into()),
    };
    let dnssec_ok = match words.next() {
        None => None,
        Some("do") => Some(true),
        Some("-do") => Some(false),
        Some(w) => return Err(format!("opt: do or -do, not '{w}'")),
    };
    Ok(crate::table::Opt {
        present: true,
        size,
        dnssec_ok,
    })
}

/// `NAME [TYPE] [CLASS] [tcp|udp] [from IP] [edns SIZE|noedns] [do] [nsid] [subnet CIDR] [nord] [cd] [ad] [aa] [serial N]`
fn query(rest: &str) -> Result<Query, String> {
    let mut words = rest.split_whitespace();
    let name = words.next().ok_or("query needs a name")?.to_string();
    let mut q = Query::named(name);
    let mut typed = false;
    while let Some(w) = words.next() {
        match w {
            "tcp" => q.tcp = true,
            "udp" => q.tcp = false,
            "from" => {
                q.from = Some(
                    words
                        .next()
                        .and_then(|a| a.parse().ok())
                        .ok_or("from needs an IP address")?,
                )
            }
            "edns" => {
                q.edns = Some(
                    words
                        .next()
                        .and_then(|s| s.parse().ok())
                        .ok_or("edns needs a payload size")?,
                )
            }
            "noedns" => q.edns = None,
            "serial" => {
                q.serial = Some(
                    words
                        .next()
                        .and_then(|s| s.parse().ok())
                        .ok_or("serial needs a number")?,
                )
            }
            "do" => {
                q.dnssec_ok = true;
                q.edns.get_or_insert(4096);
            }
            "subnet" => {
                q.subnet = Some(words.next().ok_or("subnet needs a CIDR")?.to_string());
                q.edns.get_or_insert(4096);
            }
            "nord" => q.rd = false,
            "cd" => q.cd = true,
            "ad" => q.ad = true,
            "aa" => q.aa = true,
            "nsid" => {
                q.nsid = true;
                q.edns.get_or_insert(4096);
            }
            "IN" | "CH" | "CHAOS" | "HS" | "NONE" | "ANY" if typed => q.class = w.to_string(),
            t if !typed => {
                q.qtype = t.to_ascii_uppercase();
                typed = true;
            }
            other => return Err(format!("unknown query word '{other}'")),
        }
    }
    Ok(q)
}
