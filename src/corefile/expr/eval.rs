//! Running a compiled expression: operators with expr-lang's rules (int
//! arithmetic checked, `/` always float, `+` joins strings) and the
//! functions, over [`super::value::Value`]s. Every failure is an error,
//! never a panic.

use std::net::IpAddr;

use super::parse::Node;
use super::value::Value;

/// What an expression may read of the query.
#[derive(Debug, Clone, Default)]
pub struct Query<'a> {
    /// Lowercased, with the final dot.
    pub name: &'a str,
    pub qtype: &'a str,
    pub class: &'a str,
    pub client: Option<IpAddr>,
    /// The matching regex's groups, by number and by name.
    pub groups: &'a [(String, String)],
    pub wire: Wire,
    /// What `metadata(label)` reads: the block's `metadata` when it has
    /// one; without, every label is "" (as in CoreDNS).
    pub metadata: Metadata<'a>,
}

/// The metadata of a query, label to value (`None`: not set, read as "").
#[derive(Clone, Copy, Default)]
pub struct Metadata<'a>(pub Option<Lookup<'a>>);

/// A label's value, if it is set.
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

impl std::fmt::Debug for Metadata<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Metadata(on)"
        } else {
            "Metadata(off)"
        })
    }
}

/// What the request carried besides its question, as CoreDNS's
/// `request.Request` reports it: `proto()`, `size()`, `id()`, `opcode()`,
/// `do()`, `bufsize()`, `port()`. Copied once per query (a few words);
/// only a template's expressions read it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wire {
    pub tcp: bool,
    /// The request's length in bytes.
    pub size: u16,
    pub id: u16,
    pub opcode: u8,
    pub dnssec_ok: bool,
    /// The client's EDNS payload size, at least 512 (no OPT: 512); over
    /// TCP 65535 (CoreDNS's `edns.Size`).
    pub bufsize: u16,
    /// The client's source port.
    pub port: u16,
    /// The listener's address the request came in on, when known
    /// (`server_ip()`, `server_port()`).
    pub server: Option<std::net::SocketAddr>,
}

impl Wire {
    /// The fields of a request of `len` bytes from port `port`; `edns` is
    /// the client's OPT (payload size, DO bit) when it sent one.
    pub fn of(tcp: bool, len: usize, (id, opcode): (u16, u8), edns: Option<(u16, bool)>, port: u16) -> Wire {
        let payload = edns.map_or(512, |(p, _)| p.max(512));
        Wire {
            tcp,
            size: u16::try_from(len).unwrap_or(u16::MAX),
            id,
            opcode,
            dnssec_ok: edns.is_some_and(|(_, d)| d),
            bufsize: if tcp { u16::MAX } else { payload },
            port,
            server: None,
        }
    }
}

struct Run<'a, 'q> {
    query: &'a Query<'q>,
    vars: &'a [Value],
    item: Option<&'a Value>,
}

type Out = Result<Value, String>;

pub fn run(node: &Node, query: &Query<'_>, vars: &[Value]) -> Out {
    Run {
        query,
        vars,
        item: None,
    }
    .eval(node)
}

impl Run<'_, '_> {
    fn eval(&self, node: &Node) -> Out {
        match node {
            Node::Lit(v) => Ok(v.clone()),
            Node::Var(k) => self.vars.get(*k).cloned().ok_or_else(|| "variable not set".to_string()),
            Node::Item => self.item.cloned().ok_or_else(|| "# outside a predicate".to_string()),
            Node::Array(items) => items
                .iter()
                .map(|n| self.eval(n))
                .collect::<Result<_, _>>()
                .map(Value::Array),
            Node::Unary(op, n) => match (*op, self.eval(n)?) {
                ("!", Value::Bool(b)) => Ok(Value::Bool(!b)),
                ("-", Value::Int(i)) => i.checked_neg().map(Value::Int).ok_or_else(|| "integer overflow".into()),
                ("-", Value::Float(x)) => Ok(Value::Float(-x)),
                (op, v) => Err(format!("invalid operation: {op}{v}")),
            },
            Node::Binary("&&", l, r) => Ok(Value::Bool(self.truth(l)? && self.truth(r)?)),
            Node::Binary("||", l, r) => Ok(Value::Bool(self.truth(l)? || self.truth(r)?)),
            Node::Binary(op, l, r) => binary(op, self.eval(l)?, self.eval(r)?),
            Node::Cond(c, y, n) => self.eval(if self.truth(c)? { y } else { n }),
            Node::Index(a, i) => index(self.eval(a)?, self.eval(i)?),
            Node::Call(f, args) if ["any", "all", "none", "one", "filter", "map", "count"].contains(f) => {
                self.predicate(f, args)
            }
            Node::Call(f, args) => {
                let values = args.iter().map(|n| self.eval(n)).collect::<Result<Vec<_>, _>>()?;
                self.call(f, &values)
            }
        }
    }

    fn truth(&self, n: &Node) -> Result<bool, String> {
        match self.eval(n)? {
            Value::Bool(b) => Ok(b),
            other => Err(format!("expected bool, got {other}")),
        }
    }

    fn predicate(&self, f: &str, args: &[Node]) -> Out {
        let (Some(array), Some(body)) = (args.first(), args.get(1)) else {
            return Err(format!("{f} needs an array and a predicate"));
        };
        let Value::Array(items) = self.eval(array)? else {
            return Err(format!("{f} needs an array"));
        };
        let mut results = Vec::with_capacity(items.len());
        for item in &items {
            let inner = Run {
                item: Some(item),
                ..*self
            };
            results.push(inner.eval(body)?);
        }
        let yes = |v: &Value| matches!(v, Value::Bool(true));
        let hits = results.iter().filter(|v| yes(v)).count();
        Ok(match f {
            "any" => Value::Bool(hits > 0),
            "all" => Value::Bool(hits == items.len()),
            "none" => Value::Bool(hits == 0),
            "one" => Value::Bool(hits == 1),
            "count" => Value::Int(i64::try_from(hits).unwrap_or(i64::MAX)),
            "map" => Value::Array(results),
            _ => Value::Array(
                items
                    .into_iter()
                    .zip(&results)
                    .filter(|(_, r)| yes(r))
                    .map(|(v, _)| v)
                    .collect(),
            ),
        })
    }

    /// Calls the function `f` (typed at load) with its arguments.
    fn call(&self, f: &str, a: &[Value]) -> Out {
        self.about_the_query(f, a).unwrap_or_else(|| builtin(f, a))
    }

    /// The functions that read the query and the request; `None` for
    /// any other.
    fn about_the_query(&self, f: &str, a: &[Value]) -> Option<Out> {
        let q = self.query;
        let text = |v: String| Ok(Value::Str(v));
        Some(match f {
            "name" => text(q.name.to_string()),
            "type" => text(q.qtype.to_string()),
            "class" => text(q.class.to_string()),
            // As CoreDNS's request.IP: an IPv6 address without brackets.
            "client_ip" => text(q.client.map(|ip| ip.to_string()).unwrap_or_default()),
            "proto" => text(if q.wire.tcp { "tcp" } else { "udp" }.to_string()),
            "size" => Ok(Value::Int(i64::from(q.wire.size))),
            "id" => Ok(Value::Int(i64::from(q.wire.id))),
            "opcode" => Ok(Value::Int(i64::from(q.wire.opcode))),
            "do" => Ok(Value::Bool(q.wire.dnssec_ok)),
            "bufsize" => Ok(Value::Int(i64::from(q.wire.bufsize))),
            // As CoreDNS's request.Port: a string.
            "port" => text(q.wire.port.to_string()),
            // As CoreDNS's request.LocalIP and LocalPort ("" when unknown).
            "server_ip" => text(q.wire.server.map(|a| a.ip().to_string()).unwrap_or_default()),
            "server_port" => text(q.wire.server.map(|a| a.port().to_string()).unwrap_or_default()),
            "metadata" => string_arg(f, a, 0).map(|l| Value::Str(q.metadata.0.and_then(|m| m(l)).unwrap_or_default())),
            "group" => {
                let key = match a.first() {
                    Some(Value::Int(n)) => n.to_string(),
                    Some(Value::Str(s)) => s.clone(),
                    _ => return Some(text(String::new())),
                };
                text(
                    q.groups
                        .iter()
                        .find(|(k, _)| *k == key)
                        .map(|(_, v)| v.clone())
                        .unwrap_or_default(),
                )
            }
            "incidr" => string_arg(f, a, 0).and_then(|ip| incidr(ip, string_arg(f, a, 1)?)),
            _ => return None,
        })
    }
}

/// Argument `k` of `f`, which must be a string.
fn string_arg<'a>(f: &str, a: &'a [Value], k: usize) -> Result<&'a str, String> {
    match a.get(k) {
        Some(Value::Str(s)) => Ok(s.as_str()),
        Some(other) => Err(format!("{f}: argument {} is {other}, not a string", k + 1)),
        None => Err(format!("{f}: missing argument")),
    }
}

/// The builtins on values: conversions, strings and arrays.
fn builtin(f: &str, a: &[Value]) -> Out {
    let s = |k: usize| string_arg(f, a, k);
    let text = |v: String| Ok(Value::Str(v));
    match f {
        "len" => match a.first() {
            Some(Value::Str(t)) => Ok(Value::Int(t.chars().count() as i64)),
            Some(Value::Array(v)) => Ok(Value::Int(v.len() as i64)),
            other => Err(format!("invalid argument for len (type {other:?})")),
        },
        "int" => to_int(a.first()),
        "float" => match a.first() {
            Some(Value::Int(n)) => Ok(Value::Float(*n as f64)),
            Some(Value::Float(x)) => Ok(Value::Float(*x)),
            Some(Value::Str(t)) => t
                .trim()
                .parse()
                .map(Value::Float)
                .map_err(|_| format!("invalid float {t:?}")),
            other => Err(format!("invalid argument for float (type {other:?})")),
        },
        "string" => text(a.first().map(ToString::to_string).unwrap_or_default()),
        "lower" => text(s(0)?.to_lowercase()),
        "upper" => text(s(0)?.to_uppercase()),
        "trim" => text(s(0)?.trim().to_string()),
        "trimPrefix" => text(s(0)?.strip_prefix(s(1)?).unwrap_or(s(0)?).to_string()),
        "trimSuffix" => text(s(0)?.strip_suffix(s(1)?).unwrap_or(s(0)?).to_string()),
        "replace" => text(s(0)?.replace(s(1)?, s(2)?)),
        "split" => Ok(Value::Array(
            s(0)?.split(s(1)?).map(|p| Value::Str(p.to_string())).collect(),
        )),
        "join" => match a.first() {
            Some(Value::Array(items)) => text(items.iter().map(ToString::to_string).collect::<Vec<_>>().join(s(1)?)),
            _ => Err("join needs an array".into()),
        },
        "indexOf" => Ok(Value::Int(s(0)?.find(s(1)?).map_or(-1, |i| i as i64))),
        "hasPrefix" => Ok(Value::Bool(s(0)?.starts_with(s(1)?))),
        "hasSuffix" => Ok(Value::Bool(s(0)?.ends_with(s(1)?))),
        other => Err(format!("unknown function {other}")),
    }
}

fn incidr(ip: &str, cidr: &str) -> Out {
    let ip: IpAddr = ip
        .parse()
        .map_err(|_| "first argument is not an IP address".to_string())?;
    let net = crate::corefile::args::Net::parse(cidr).ok_or_else(|| format!("invalid CIDR address: {cidr}"))?;
    Ok(Value::Bool(net.contains(ip)))
}

fn to_int(v: Option<&Value>) -> Out {
    match v {
        Some(Value::Int(n)) => Ok(Value::Int(*n)),
        Some(Value::Float(x)) if x.is_finite() => Ok(Value::Int(*x as i64)),
        Some(Value::Str(t)) => t
            .trim()
            .parse()
            .map(Value::Int)
            .map_err(|_| format!("invalid integer {t:?}")),
        other => Err(format!("invalid argument for int (type {other:?})")),
    }
}

fn index(a: Value, i: Value) -> Out {
    let Value::Int(i) = i else {
        return Err("index must be an int".into());
    };
    let at = |len: usize| {
        usize::try_from(if i < 0 { i + len as i64 } else { i })
            .ok()
            .filter(|k| *k < len)
    };
    match a {
        Value::Array(items) => at(items.len())
            .and_then(|k| items.get(k).cloned())
            .ok_or_else(|| format!("index out of range: {i}")),
        Value::Str(s) => {
            let chars: Vec<char> = s.chars().collect();
            at(chars.len())
                .map(|k| Value::Str(chars[k].to_string()))
                .ok_or_else(|| format!("index out of range: {i}"))
        }
        other => Err(format!("cannot index {other}")),
    }
}

fn binary(op: &str, l: Value, r: Value) -> Out {
    use Value::{Array, Bool, Float, Int, Str};
    let overflow = || "integer overflow".to_string();
    Ok(match (op, l, r) {
        ("+", Str(a), Str(b)) => Str(a + &b),
        ("+", Int(a), Int(b)) => Int(a.checked_add(b).ok_or_else(overflow)?),
        ("-", Int(a), Int(b)) => Int(a.checked_sub(b).ok_or_else(overflow)?),
        ("*", Int(a), Int(b)) => Int(a.checked_mul(b).ok_or_else(overflow)?),
        ("%", Int(_), Int(0)) => return Err("integer divide by zero".into()),
        ("%", Int(a), Int(b)) => Int(a.checked_rem(b).ok_or_else(overflow)?),
        ("==", a, b) => Bool(equal(&a, &b)),
        ("!=", a, b) => Bool(!equal(&a, &b)),
        ("in", a, Array(items)) => Bool(items.iter().any(|v| equal(v, &a))),
        ("contains", Str(a), Str(b)) => Bool(a.contains(&b)),
        ("startsWith", Str(a), Str(b)) => Bool(a.starts_with(&b)),
        ("endsWith", Str(a), Str(b)) => Bool(a.ends_with(&b)),
        ("matches", Str(a), Str(b)) => Bool(regex::Regex::new(&b).map_err(|e| e.to_string())?.is_match(&a)),
        ("<" | "<=" | ">" | ">=", Str(a), Str(b)) => Bool(order(op, a.cmp(&b))),
        (op, a, b) => {
            let (Some(x), Some(y)) = (float(&a), float(&b)) else {
                return Err(format!("invalid operation: {a} {op} {b}"));
            };
            match op {
                "+" => Float(x + y),
                "-" => Float(x - y),
                "*" => Float(x * y),
                "/" => Float(x / y),
                "<" | "<=" | ">" | ">=" => Bool(order(op, x.partial_cmp(&y).ok_or("NaN compared")?)),
                _ => return Err(format!("invalid operation: {a} {op} {b}")),
            }
        }
    })
}

fn float(v: &Value) -> Option<f64> {
    match v {
        Value::Int(n) => Some(*n as f64),
        Value::Float(x) => Some(*x),
        _ => None,
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    match (float(a), float(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn order(op: &str, o: std::cmp::Ordering) -> bool {
    match op {
        "<" => o.is_lt(),
        "<=" => o.is_le(),
        ">" => o.is_gt(),
        _ => o.is_ge(),
    }
}
