//! The resolver matrix's model: the pods (one resolv.conf each), the cases
//! (read from cases.txt: a name, a kind of lookup and the answer a pod must
//! get), the clients, and what each client does differently, as
//! expectations with reasons.
//!
//! What the clients do differently (each rule is applied in [`expect`]):
//!
//! | client | search list | over 512 bytes | SERVFAIL (server not synced) |
//! |---|---|---|---|
//! | glibc `getaddrinfo`, `res_search`; Node `dns.lookup` and Java `InetAddress` call it | walks it, NODATA does not stop the walk | retries over TCP | `EAI_AGAIN` / `TRY_AGAIN` (a SERVFAIL anywhere in the walk wins over the last NXDOMAIN) |
//! | `getent hosts` / `ahosts` (glibc) | as glibc; `hosts` asks AF_INET6 first and shows IPv4 only when there is no IPv6 address | as glibc | exit status 2 for every failure: it cannot tell "not found" from "try again" |
//! | musl 1.2.3 (static) | `getaddrinfo` walks it but stops at the first NODATA; `res_search` is `res_query` (no search list) | no TCP fallback: it keeps the whole records of the truncated 512-byte reply (what `dig +noedns +ignore` shows) | retries once, then ignores SERVFAIL and waits out its timeout (5 s) before `EAI_AGAIN` |
//! | Go 1.19 pure resolver | walks it | EDNS 1232, TCP on TC | for a name that needs the search list Go reports the error of the name as given (`web.`, NXDOMAIN upstream): "no such host", not temporary; a fully qualified name reports "server misbehaving" (temporary) |
//! | c-ares 1.18 `ares_getaddrinfo`, `ares_search` | walks it (ndots from resolv.conf) | TCP on TC | `ARES_ECONNREFUSED` ("Could not contact DNS servers", 1.18's word for SERVFAIL from every server); `ares_gethostbyaddr` then tries /etc/hosts and says `ARES_ENOTFOUND` |
//! | Node `dns.resolve*` (its bundled c-ares, `ares_query`) | none: a short name is asked as is | TCP on TC | `ESERVFAIL`; `dns.reverse` (`ares_gethostbyaddr`) `ENOTFOUND` as c-ares |
//! | dnspython 2.3, `search=True` | walks it, but a NOERROR without the type asked ends the walk (NoAnswer) | TCP on TC | `NoNameservers` |
//! | Java JNDI DNS (`SRV`, `PTR`) | none: names are relative to the root | TCP on TC | `ServiceUnavailableException` |
//!
//! Java caches `InetAddress` lookups (30 s found, 10 s not found by
//! default): `Lookup.java` turns the cache off so every cell is a fresh
//! lookup; a pod's JVM would keep a NXDOMAIN for 10 s.

use std::collections::HashMap;
use std::net::IpAddr;

/// A pod: the resolv.conf the kubelet writes for its namespace.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pod {
    Shop,
    Db,
    /// In `shop`, but its nameserver (127.0.0.3) has not synced yet.
    Unsynced,
}

impl Pod {
    pub const ALL: [Pod; 3] = [Pod::Shop, Pod::Db, Pod::Unsynced];

    pub fn name(self) -> &'static str {
        match self {
            Pod::Shop => "shop",
            Pod::Db => "db",
            Pod::Unsynced => "unsynced",
        }
    }

    pub fn resolv_conf(self) -> String {
        let (server, ns) = match self {
            Pod::Shop => ("127.0.0.1", "shop"),
            Pod::Db => ("127.0.0.1", "db"),
            Pod::Unsynced => ("127.0.0.3", "shop"),
        };
        format!("nameserver {server}\nsearch {ns}.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n")
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Host,
    Srv,
    Cname,
    Ptr,
}

impl Kind {
    pub fn word(self) -> &'static str {
        match self {
            Kind::Host => "host",
            Kind::Srv => "srv",
            Kind::Cname => "cname",
            Kind::Ptr => "ptr",
        }
    }
}

/// How a lookup failed, as the client reports it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Class {
    NotFound,
    Temp,
    /// getent's exit status 2: some failure.
    Getent,
    Timeout,
    Error,
}

impl Class {
    pub fn parse(word: &str) -> Class {
        match word {
            "notfound" => Class::NotFound,
            "temp" => Class::Temp,
            "fail" => Class::Getent,
            "timeout" => Class::Timeout,
            _ => Class::Error,
        }
    }
}

#[derive(Clone, PartialEq, Debug)]
pub enum Outcome {
    /// Addresses, SRV records (`prio:weight:port:target`) or names,
    /// normalized by [`normalize`].
    Values(Vec<String>),
    Fail(Class),
}

pub struct Case {
    pub id: String,
    pub pod: Pod,
    pub kind: Kind,
    pub name: String,
    /// Resolvable only through the pod's search list.
    pub relative: bool,
    /// Over 512 bytes: what a client without TCP gets is what the
    /// truncated reply holds, recorded with dig under this case's id.
    pub over_512: bool,
    pub want: Outcome,
}

const NOTFOUND: Outcome = Outcome::Fail(Class::NotFound);

/// The generated headless Services: name, endpoint count, third octet
/// (cases.txt expects these).
pub const BIG: [(&str, u32, u32); 2] = [("mid", 40, 3), ("huge", 100, 4)];
/// A records of `many.example.com` at the upstream (cases.txt expects these).
pub const MANY: u32 = 40;

/// `a{1..3}b` → `a1b a2b a3b`; any other token stays as it is.
fn expand(token: &str) -> Vec<String> {
    let range = token.split_once('{').and_then(|(head, rest)| {
        let (range, tail) = rest.split_once('}')?;
        let (from, to) = range.split_once("..")?;
        Some((head, from.parse::<u32>().ok()?, to.parse::<u32>().ok()?, tail))
    });
    match range {
        Some((head, from, to, tail)) => (from..=to).map(|k| format!("{head}{k}{tail}")).collect(),
        None => vec![token.to_string()],
    }
}

/// Parses one line of cases.txt (see its header for the columns).
fn case(line: &str) -> Result<Case, String> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let [id, pod, kind, name, search, want @ ..] = f.as_slice() else {
        return Err("want ID POD KIND NAME SEARCH WANT...".into());
    };
    let pod = Pod::ALL
        .into_iter()
        .find(|p| p.name() == *pod)
        .ok_or(format!("unknown pod {pod}"))?;
    let kind = [Kind::Host, Kind::Srv, Kind::Cname, Kind::Ptr]
        .into_iter()
        .find(|k| k.word() == *kind)
        .ok_or(format!("unknown kind {kind}"))?;
    let want = match want {
        [] => return Err("no WANT".into()),
        ["notfound"] => NOTFOUND,
        ["temp"] => Outcome::Fail(Class::Temp),
        values => Outcome::Values(values.iter().flat_map(|v| expand(v)).collect()),
    };
    Ok(Case {
        id: (*id).to_string(),
        pod,
        kind,
        name: (*name).to_string(),
        relative: *search == "yes",
        over_512: id.contains("-over-"),
        want,
    })
}

/// Every case of `text` (cases.txt), in order; panics naming a bad line.
pub fn cases(text: &str) -> Vec<Case> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(n, l)| case(l).unwrap_or_else(|e| panic!("cases.txt:{}: {e}", n + 1)))
        .collect()
}

/// The clients, one column each.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Client {
    GetentHosts,
    GetentAhosts,
    Glibc,
    Musl,
    Go,
    Cares,
    NodeLookup,
    NodeResolve,
    Dnspython,
    Java,
}

impl Client {
    pub const ALL: [Client; 10] = [
        Client::GetentHosts,
        Client::GetentAhosts,
        Client::Glibc,
        Client::Musl,
        Client::Go,
        Client::Cares,
        Client::NodeLookup,
        Client::NodeResolve,
        Client::Dnspython,
        Client::Java,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Client::GetentHosts => "getent-hosts",
            Client::GetentAhosts => "getent-ahosts",
            Client::Glibc => "glibc",
            Client::Musl => "musl",
            Client::Go => "go",
            Client::Cares => "c-ares",
            Client::NodeLookup => "node-lookup",
            Client::NodeResolve => "node-resolve",
            Client::Dnspython => "dnspython",
            Client::Java => "java",
        }
    }

    /// The kinds of lookup the client's program makes.
    pub fn does(self, kind: Kind) -> bool {
        match self {
            Client::GetentHosts => matches!(kind, Kind::Host | Kind::Ptr),
            Client::GetentAhosts | Client::NodeLookup => kind == Kind::Host,
            Client::Glibc | Client::Musl => matches!(kind, Kind::Host | Kind::Srv),
            Client::Cares | Client::Java => kind != Kind::Cname,
            Client::Go | Client::NodeResolve | Client::Dnspython => true,
        }
    }
}

/// What a cell must report. How long a lookup took is printed, never
/// bounded (a busy machine moves it): that no reply was lost is asserted
/// on the servers' counts instead (every request answered).
pub struct Expect {
    pub outcome: Outcome,
}

/// What `client` must report for `case`; `None` when it does not make
/// that kind of lookup. `truncated` holds what the 512-byte replies of the
/// `over_512` cases carry (dig +noedns +ignore).
pub fn expect(client: Client, case: &Case, truncated: &HashMap<String, Vec<String>>) -> Option<Expect> {
    if !client.does(case.kind) {
        return None;
    }
    let mut outcome = case.want.clone();
    let failed = matches!(outcome, Outcome::Fail(_));
    match client {
        Client::GetentHosts | Client::GetentAhosts if failed => outcome = Outcome::Fail(Class::Getent),
        Client::GetentHosts if case.kind == Kind::Host => outcome = ipv6_else_ipv4(outcome),
        Client::Musl => {
            if case.kind == Kind::Srv && case.relative {
                outcome = NOTFOUND; // res_search is res_query: no search list
            }
            if case.over_512 {
                let got = truncated.get(&case.id).cloned().unwrap_or_default();
                outcome = Outcome::Values(normalize(case.kind, got));
            }
        }
        Client::Go if case.pod == Pod::Unsynced && case.relative => outcome = NOTFOUND,
        Client::NodeResolve if case.relative => outcome = NOTFOUND,
        // ares_gethostbyaddr tries /etc/hosts after a DNS failure and
        // reports that lookup's ENOTFOUND (Node's dns.reverse calls it too)
        Client::Cares | Client::NodeResolve if case.kind == Kind::Ptr && failed => outcome = NOTFOUND,
        Client::Java if case.kind != Kind::Host && case.relative => outcome = NOTFOUND,
        _ => {}
    }
    if let Outcome::Values(v) = outcome {
        outcome = Outcome::Values(normalize(case.kind, v));
    }
    Some(Expect { outcome })
}

/// `getent hosts`: gethostbyname2(AF_INET6), then AF_INET when that fails.
fn ipv6_else_ipv4(outcome: Outcome) -> Outcome {
    let Outcome::Values(v) = outcome else { return outcome };
    let v6: Vec<String> = v.iter().filter(|a| a.contains(':')).cloned().collect();
    Outcome::Values(if v6.is_empty() { v } else { v6 })
}

/// One form for every client's spelling: addresses parsed (Java writes
/// IPv6 uncompressed) and deduplicated (getaddrinfo lists one per socket
/// type); names lower-case without the final dot, duplicates kept (an
/// RRset never holds any); sorted.
pub fn normalize(kind: Kind, values: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = values
        .into_iter()
        .map(|v| match (kind, v.parse::<IpAddr>()) {
            (Kind::Host, Ok(ip)) => ip.to_string(),
            _ => v.trim_end_matches('.').to_ascii_lowercase(),
        })
        .collect();
    out.sort();
    if kind == Kind::Host {
        out.dedup();
    }
    out
}
