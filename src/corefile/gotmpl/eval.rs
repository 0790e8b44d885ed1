//! Running a parsed template: the values fields and functions produce,
//! and how Go prints them.

use std::fmt;

use super::tree::{Command, Func, Operand, Pipeline};

/// What a template sees of one matched query.
#[derive(Debug, Clone, Default)]
pub struct Data<'a> {
    pub zone: &'a str,
    /// The query name, lowercased.
    pub name: &'a str,
    pub class: &'a str,
    pub qtype: &'a str,
    pub regex: &'a str,
    /// `index .Match 0` is the whole match.
    pub matches: Vec<String>,
    /// Named groups and every group by number.
    pub groups: Vec<(String, String)>,
    pub remote: String,
    /// The question as asked: name, type and class numbers.
    pub question: (&'a str, u16, u16),
    /// The template's `var`s, by name.
    pub vars: Vec<(String, Value)>,
    /// What `.Meta "LABEL"` reads: the block's `metadata`, when it has one
    /// for the name (a label unset, or no `metadata`: "", as in CoreDNS).
    pub meta: crate::corefile::expr::Metadata<'a>,
}

/// A value inside a template.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Uint(u64),
    Bool(bool),
    List(Vec<Value>),
    Map(Vec<(String, String)>),
    Question(String, u16, u16),
    /// A map key that is not there (Go prints `<no value>`).
    Missing,
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(s) => f.write_str(s),
            Value::Int(n) => write!(f, "{n}"),
            Value::Uint(n) => write!(f, "{n}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::List(items) => {
                let parts: Vec<String> = items.iter().map(ToString::to_string).collect();
                write!(f, "[{}]", parts.join(" "))
            }
            Value::Map(pairs) => {
                let mut sorted = pairs.clone();
                sorted.sort();
                let parts: Vec<String> = sorted.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                write!(f, "map[{}]", parts.join(" "))
            }
            Value::Question(name, qtype, class) => {
                let t = hickory_proto::rr::RecordType::from(*qtype);
                let c = hickory_proto::rr::DNSClass::from(*class);
                write!(f, ";{name}\t{c}\t {t}")
            }
            Value::Missing => f.write_str("<no value>"),
        }
    }
}

impl Value {
    pub(super) fn truthy(&self) -> bool {
        match self {
            Value::Str(s) => !s.is_empty(),
            Value::Int(n) => *n != 0,
            Value::Uint(n) => *n != 0,
            Value::Bool(b) => *b,
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Question(..) => true,
            Value::Missing => false,
        }
    }

    fn number(&self) -> Option<i128> {
        match self {
            Value::Int(n) => Some(i128::from(*n)),
            Value::Uint(n) => Some(i128::from(*n)),
            _ => None,
        }
    }
}

pub(super) fn pipeline(p: &Pipeline, data: &Data<'_>) -> Result<Value, String> {
    let mut last: Option<Value> = None;
    for cmd in &p.0 {
        last = Some(command(cmd, data, last.take())?);
    }
    last.ok_or_else(|| "empty pipeline".to_string())
}

fn command(cmd: &Command, data: &Data<'_>, piped: Option<Value>) -> Result<Value, String> {
    let (head, rest) = cmd.0.split_first().ok_or("empty command")?;
    let mut args = rest.iter().map(|a| operand(a, data)).collect::<Result<Vec<_>, _>>()?;
    args.extend(piped);
    match head {
        Operand::Func(f) => call(*f, args),
        Operand::Field(path) if path.len() == 1 && path[0] == "Meta" => match args.as_slice() {
            [Value::Str(label)] => Ok(Value::Str(data.meta.0.and_then(|m| m(label)).unwrap_or_default())),
            _ => Err(".Meta takes one string".into()),
        },
        other if args.is_empty() => operand(other, data),
        _ => Err("can't give an argument to a non-function".into()),
    }
}

fn operand(op: &Operand, data: &Data<'_>) -> Result<Value, String> {
    Ok(match op {
        Operand::Dot => Value::Str(String::from("{template data}")),
        Operand::Str(s) => Value::Str(s.clone()),
        Operand::Int(n) => Value::Int(*n),
        Operand::Bool(b) => Value::Bool(*b),
        Operand::Sub(p) => pipeline(p, data)?,
        Operand::Func(f) => call(*f, Vec::new())?,
        Operand::Field(path) => field(path, data)?,
    })
}

fn field(path: &[String], d: &Data<'_>) -> Result<Value, String> {
    let parts: Vec<&str> = path.iter().map(String::as_str).collect();
    let question = || Value::Question(d.question.0.to_string(), d.question.1, d.question.2);
    Ok(match parts.as_slice() {
        ["Name"] => Value::Str(d.name.into()),
        ["Zone"] => Value::Str(d.zone.into()),
        ["Class"] => Value::Str(d.class.into()),
        ["Type"] => Value::Str(d.qtype.into()),
        ["Regex"] => Value::Str(d.regex.into()),
        ["Remote"] => Value::Str(d.remote.clone()),
        ["Match"] => Value::List(d.matches.iter().cloned().map(Value::Str).collect()),
        ["Group"] => Value::Map(d.groups.clone()),
        ["Group", key] => d
            .groups
            .iter()
            .find(|(k, _)| k == key)
            .map_or(Value::Missing, |(_, v)| Value::Str(v.clone())),
        ["Question"] => question(),
        ["Question", "Name"] => Value::Str(d.question.0.into()),
        ["Question", "Qtype"] => Value::Uint(u64::from(d.question.1)),
        ["Question", "Qclass"] => Value::Uint(u64::from(d.question.2)),
        ["Message", "Question"] => Value::List(vec![question()]),
        ["Meta"] => return Err(".Meta needs a name".into()),
        ["Var"] => Value::Map(d.vars.iter().map(|(k, v)| (k.clone(), v.to_string())).collect()),
        ["Var", key] => d
            .vars
            .iter()
            .find(|(k, _)| k == key)
            .map_or(Value::Missing, |(_, v)| v.clone()),
        _ => return Err(format!("no field .{}", path.join("."))),
    })
}

fn call(f: Func, args: Vec<Value>) -> Result<Value, String> {
    let want = |n: usize| -> Result<(), String> {
        match args.len() == n {
            true => Ok(()),
            false => Err(format!("wrong number of args for {f:?}: want {n} got {}", args.len())),
        }
    };
    match f {
        Func::ParseInt => {
            want(3)?;
            parse_int(&args)
        }
        Func::Index => index(args),
        Func::Len => {
            want(1)?;
            Ok(Value::Int(match &args[0] {
                Value::Str(s) => s.len() as i64,
                Value::List(l) => l.len() as i64,
                Value::Map(m) => m.len() as i64,
                other => return Err(format!("len of {other}")),
            }))
        }
        Func::Printf => {
            let (format, rest) = args.split_first().ok_or("printf needs a format")?;
            Ok(Value::Str(printf(&format.to_string(), rest)))
        }
        Func::Print => Ok(Value::Str(print(&args))),
        Func::Println => {
            let parts: Vec<String> = args.iter().map(ToString::to_string).collect();
            Ok(Value::Str(parts.join(" ") + "\n"))
        }
        Func::Eq | Func::Ne | Func::Lt | Func::Le | Func::Gt | Func::Ge => compare(f, &args),
        Func::And | Func::Or => {
            let stop = |v: &Value| v.truthy() == (f == Func::Or);
            let last = args.last().cloned().ok_or("and/or need arguments")?;
            Ok(args.iter().find(|v| stop(v)).cloned().unwrap_or(last))
        }
        Func::Not => {
            want(1)?;
            Ok(Value::Bool(!args[0].truthy()))
        }
    }
}

/// Go's `strconv.ParseUint(s, base, bits)`.
fn parse_int(args: &[Value]) -> Result<Value, String> {
    let text = args[0].to_string();
    let (base, bits) = match (args[1].number(), args[2].number()) {
        (Some(b), Some(n)) if (b == 0 || (2..=36).contains(&b)) && (0..=64).contains(&n) => (b as u32, n as u32),
        _ => return Err("parseInt: bad base or bit size".into()),
    };
    let (digits, base) = match (base, text.get(..2)) {
        (0, Some("0x" | "0X")) => (&text[2..], 16),
        (0, Some("0b" | "0B")) => (&text[2..], 2),
        (0, Some("0o" | "0O")) => (&text[2..], 8),
        (0, _) if text.len() > 1 && text.starts_with('0') => (&text[1..], 8),
        (0, _) => (text.as_str(), 10),
        (b, _) => (text.as_str(), b),
    };
    let value = u64::from_str_radix(digits, base).map_err(|e| format!("parseInt {text:?}: {e}"))?;
    let bits = if bits == 0 { 64 } else { bits };
    if bits < 64 && value >> bits != 0 {
        return Err(format!("parseInt {text:?}: value out of range"));
    }
    Ok(Value::Uint(value))
}

fn index(args: Vec<Value>) -> Result<Value, String> {
    let mut it = args.into_iter();
    let mut item = it.next().ok_or("index of nothing")?;
    for key in it {
        item = match (item, key.number()) {
            (Value::List(list), Some(i)) => usize::try_from(i)
                .ok()
                .and_then(|i| list.get(i).cloned())
                .ok_or_else(|| format!("index out of range: {i}"))?,
            (Value::Map(map), _) => {
                let k = key.to_string();
                map.into_iter()
                    .find(|(name, _)| *name == k)
                    .map_or(Value::Str(String::new()), |(_, v)| Value::Str(v))
            }
            (other, _) => return Err(format!("can't index item of type {other:?}")),
        };
    }
    Ok(item)
}

fn compare(f: Func, args: &[Value]) -> Result<Value, String> {
    let (a, rest) = args.split_first().ok_or("missing argument for comparison")?;
    let order = |b: &Value| -> Result<std::cmp::Ordering, String> {
        match (a, b) {
            (Value::Str(x), Value::Str(y)) => Ok(x.cmp(y)),
            (Value::Bool(x), Value::Bool(y)) if matches!(f, Func::Eq | Func::Ne) => Ok(x.cmp(y)),
            _ => match (a.number(), b.number()) {
                (Some(x), Some(y)) => Ok(x.cmp(&y)),
                _ => Err(format!("incompatible types for comparison: {a} and {b}")),
            },
        }
    };
    use std::cmp::Ordering::*;
    if f == Func::Eq {
        for b in rest {
            if order(b)? == Equal {
                return Ok(Value::Bool(true));
            }
        }
        return Ok(Value::Bool(false));
    }
    let [b] = rest else {
        return Err("comparison takes two arguments".into());
    };
    let o = order(b)?;
    Ok(Value::Bool(match f {
        Func::Ne => o != Equal,
        Func::Lt => o == Less,
        Func::Le => o != Greater,
        Func::Gt => o == Greater,
        _ => o != Less,
    }))
}

/// Go's `fmt.Sprint`: spaces only between operands that are not strings.
fn print(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, v) in args.iter().enumerate() {
        let both_other = i > 0 && !matches!(v, Value::Str(_)) && !matches!(args[i - 1], Value::Str(_));
        if both_other {
            out.push(' ');
        }
        out.push_str(&v.to_string());
    }
    out
}

/// Go's `fmt.Sprintf` for the verbs `%s %v %d %x %X %o %q %%`, with flags `-0`
/// and a width.
fn printf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let (mut left, mut zero, mut width) = (false, false, 0usize);
        while let Some(&flag @ ('-' | '0' | '+' | ' ' | '#')) = chars.peek() {
            left |= flag == '-';
            zero |= flag == '0';
            chars.next();
        }
        while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
            width = (width * 10 + d as usize).min(255); // no output bigger than a record
            chars.next();
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(v) = args.next() else {
            let _ = write!(out, "%!{verb}(MISSING)");
            continue;
        };
        let text = match (verb, v.number()) {
            ('x', Some(n)) => format!("{n:x}"),
            ('X', Some(n)) => format!("{n:X}"),
            ('o', Some(n)) => format!("{n:o}"),
            ('x', None) => v.to_string().bytes().map(|b| format!("{b:02x}")).collect(),
            ('q', _) => format!("{:?}", v.to_string()),
            ('d', None) => format!("%!d({v})"),
            _ => v.to_string(),
        };
        let pad = width.saturating_sub(text.chars().count());
        match (left, zero && v.number().is_some()) {
            (true, _) => out.push_str(&(text + &" ".repeat(pad))),
            (false, true) => out.push_str(&("0".repeat(pad) + &text)),
            (false, false) => out.push_str(&(" ".repeat(pad) + &text)),
        }
    }
    for extra in args {
        let _ = write!(out, "%!(EXTRA {extra})");
    }
    out
}

use std::fmt::Write as _;
