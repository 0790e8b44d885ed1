//! The part of Go's `text/template` that `template` RR lines use, parsed
//! once at load (so unsupported syntax is a config error with its
//! position) and run per matching query.
//!
//! ```text
//! template = { text | "{{" ["-"] action ["-"] "}}" }      -- "-" trims the adjacent spaces
//! action   = pipeline | "/*" comment "*/"
//!          | "if" pipeline  template  [ "{{else}}" template ]  "{{end}}"
//! pipeline = command { "|" command }                      -- a command's value is the last
//! command  = operand { operand } | FUNC { operand }       --   argument of the next one
//! operand  = "." | field { field } | STRING | RAW | NUMBER | "true" | "false" | "(" pipeline ")"
//! field    = "." NAME                                      -- .Name .Group.a .Question.Qtype .Var.x
//! FUNC     = parseInt | index | len | printf | print | println | eq | ne | lt | le | gt | ge
//!          | and | or | not
//! ```
//!
//! Not supported (an error at load): `else if`, `range`/`with`/`define` and
//! the other keywords, variables (`$x`), and the escaping functions. A
//! field the data has not (`.Grup`) parses, as Go's parser takes it, and
//! fails each run ("no field"), as Go's execution does; `unknown_fields`
//! names them so that the loader can warn.

use std::fmt::Write as _;

mod eval;
mod tree;
pub use eval::{Data, Value};
use tree::{Command, Func, Operand, Pipeline};

/// A parsed template and the text it came from.
#[derive(Debug, Clone)]
pub struct Template {
    pub source: String,
    nodes: Vec<Node>,
    /// Whether the output depends on the client (`.Remote`, `.Meta`: a
    /// label may be the client's).
    pub uses_remote: bool,
    /// Fields no run has (`.Grup`): each run fails.
    pub unknown_fields: Vec<String>,
}

#[derive(Debug, Clone)]
enum Node {
    Text(String),
    Action(Pipeline),
    /// `{{if P}}THEN{{else}}ELSE{{end}}`.
    If(Pipeline, Vec<Node>, Vec<Node>),
}

/// An `if` being read: its condition, its branch, and its else branch
/// once `{{else}}` was seen.
struct Open {
    cond: Pipeline,
    then: Vec<Node>,
    otherwise: Option<Vec<Node>>,
}

/// The list the next node goes into: the innermost open branch, or the top.
fn target<'a>(top: &'a mut Vec<Node>, open: &'a mut [Open]) -> &'a mut Vec<Node> {
    match open.last_mut() {
        Some(Open {
            otherwise: Some(list), ..
        }) => list,
        Some(o) => &mut o.then,
        None => top,
    }
}

const FUNCS: [(&str, Func); 15] = [
    ("parseInt", Func::ParseInt),
    ("index", Func::Index),
    ("len", Func::Len),
    ("printf", Func::Printf),
    ("print", Func::Print),
    ("println", Func::Println),
    ("eq", Func::Eq),
    ("ne", Func::Ne),
    ("lt", Func::Lt),
    ("le", Func::Le),
    ("gt", Func::Gt),
    ("ge", Func::Ge),
    ("and", Func::And),
    ("or", Func::Or),
    ("not", Func::Not),
];

/// Field paths a template may use (`*` is any map key).
const FIELDS: &[&[&str]] = &[
    &["Name"],
    &["Zone"],
    &["Class"],
    &["Type"],
    &["Regex"],
    &["Remote"],
    &["Match"],
    &["Group"],
    &["Group", "*"],
    &["Question"],
    &["Question", "Name"],
    &["Question", "Qtype"],
    &["Question", "Qclass"],
    &["Message", "Question"],
    &["Meta"],
    &["Var"],
    &["Var", "*"],
];

const KEYWORDS: [&str; 11] = [
    "if", "else", "end", "range", "with", "define", "template", "block", "break", "continue", "nil",
];

impl Template {
    /// Parses `source`; the error says what is wrong and where in it.
    pub fn parse(source: &str) -> Result<Template, String> {
        let mut nodes = Vec::new();
        let mut ifs: Vec<Open> = Vec::new();
        let mut rest = source;
        let mut trim_next = false;
        while !rest.is_empty() {
            let Some(open) = rest.find("{{") else {
                push_text(target(&mut nodes, &mut ifs), rest, trim_next, false);
                break;
            };
            let mut inner = &rest[open + 2..];
            let trim_before = inner.starts_with("- ") || inner.starts_with("-\t");
            push_text(target(&mut nodes, &mut ifs), &rest[..open], trim_next, trim_before);
            if trim_before {
                inner = &inner[1..];
            }
            let Some(close) = inner.find("}}") else {
                return Err(format!("unclosed action at offset {open}"));
            };
            let mut body = &inner[..close];
            trim_next = body.ends_with(" -") || body.ends_with("\t-");
            if trim_next {
                body = &body[..body.len() - 1];
            }
            rest = &inner[close + 2..];
            action(body.trim(), &mut nodes, &mut ifs)?;
        }
        if !ifs.is_empty() {
            return Err("unexpected EOF: {{if}} without {{end}}".into());
        }
        let uses_remote = source.contains(".Remote") || source.contains(".Meta");
        let mut unknown_fields = Vec::new();
        fields(&nodes, &mut |path| {
            if !known(path) {
                unknown_fields.push(format!(".{}", path.join(".")));
            }
        });
        Ok(Template {
            source: source.to_string(),
            nodes,
            uses_remote,
            unknown_fields,
        })
    }

    /// Runs the template over `data`; an error is an execution failure.
    pub fn execute(&self, data: &Data<'_>) -> Result<String, String> {
        let mut out = String::new();
        run(&self.nodes, data, &mut out)?;
        Ok(out)
    }
}

/// Reads one action's `body` into the tree: a comment (dropped), an
/// `if`, `else` or `end` (opening and closing branches in `ifs`), or a
/// pipeline.
fn action(body: &str, nodes: &mut Vec<Node>, ifs: &mut Vec<Open>) -> Result<(), String> {
    if body.starts_with("/*") && body.ends_with("*/") {
        return Ok(());
    }
    if let Some(cond) = body.strip_prefix("if ") {
        let cond = parse_pipeline(cond)?;
        ifs.push(Open {
            cond,
            then: Vec::new(),
            otherwise: None,
        });
        return Ok(());
    }
    let depth = ifs.len();
    match (body, ifs.last_mut()) {
        ("else", Some(o)) if o.otherwise.is_none() => o.otherwise = Some(Vec::new()),
        ("else" | "end", _) if depth == 0 => return Err(format!("unexpected {{{{{body}}}}}")),
        ("else", _) => return Err("{{else}} after {{else}}".into()),
        ("end", _) => {
            if let Some(o) = ifs.pop() {
                let node = Node::If(o.cond, o.then, o.otherwise.unwrap_or_default());
                target(nodes, ifs).push(node);
            }
        }
        _ => {
            let pipeline = parse_pipeline(body)?;
            target(nodes, ifs).push(Node::Action(pipeline));
        }
    }
    Ok(())
}

fn run(nodes: &[Node], data: &Data<'_>, out: &mut String) -> Result<(), String> {
    for node in nodes {
        match node {
            Node::Text(t) => out.push_str(t),
            Node::Action(p) => {
                let v = eval::pipeline(p, data)?;
                let _ = write!(out, "{v}");
            }
            Node::If(cond, then, otherwise) => {
                let branch = if eval::pipeline(cond, data)?.truthy() {
                    then
                } else {
                    otherwise
                };
                run(branch, data, out)?;
            }
        }
    }
    Ok(())
}

/// One action's pipeline, all of it.
fn parse_pipeline(body: &str) -> Result<Pipeline, String> {
    let mut p = Parser {
        toks: tokens(body)?,
        i: 0,
    };
    let pipeline = p.pipeline()?;
    if p.i < p.toks.len() {
        return Err(format!("unexpected '{}' in {{{{{body}}}}}", p.toks[p.i]));
    }
    Ok(pipeline)
}

fn push_text(nodes: &mut Vec<Node>, text: &str, trim_start: bool, trim_end: bool) {
    let mut t = text;
    if trim_start {
        t = t.trim_start();
    }
    if trim_end {
        t = t.trim_end();
    }
    if !t.is_empty() {
        nodes.push(Node::Text(t.to_string()));
    }
}

/// Splits an action into tokens: strings keep their quotes, fields their dot.
fn tokens(body: &str) -> Result<Vec<String>, String> {
    let chars: Vec<char> = body.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        match c {
            '(' | ')' | '|' => i += 1,
            '"' | '`' => {
                i += 1;
                while i < chars.len() && chars[i] != c {
                    i += if c == '"' && chars[i] == '\\' { 2 } else { 1 };
                }
                if i >= chars.len() {
                    return Err(format!("unterminated string in {{{{{body}}}}}"));
                }
                i += 1;
            }
            _ => {
                while i < chars.len() && !chars[i].is_whitespace() && !"()|\"`".contains(chars[i]) {
                    i += 1;
                }
            }
        }
        out.push(chars[start..i].iter().collect());
    }
    Ok(out)
}

struct Parser {
    toks: Vec<String>,
    i: usize,
}

impl Parser {
    fn pipeline(&mut self) -> Result<Pipeline, String> {
        let mut cmds = vec![self.command()?];
        while self.toks.get(self.i).is_some_and(|t| t == "|") {
            self.i += 1;
            cmds.push(self.command()?);
        }
        Ok(Pipeline(cmds))
    }

    fn command(&mut self) -> Result<Command, String> {
        let mut ops = Vec::new();
        while let Some(t) = self.toks.get(self.i).cloned() {
            if t == "|" || t == ")" {
                break;
            }
            self.i += 1;
            ops.push(if t == "(" {
                let sub = self.pipeline()?;
                if self.toks.get(self.i).map(String::as_str) != Some(")") {
                    return Err("missing ')'".into());
                }
                self.i += 1;
                Operand::Sub(sub)
            } else {
                operand(&t)?
            });
        }
        if ops.is_empty() {
            return Err("missing value for command".into());
        }
        Ok(Command(ops))
    }
}

fn operand(t: &str) -> Result<Operand, String> {
    if t == "." {
        return Ok(Operand::Dot);
    }
    if let Some(path) = t.strip_prefix('.') {
        return Ok(Operand::Field(path.split('.').map(str::to_string).collect()));
    }
    if let Some(q) = t.strip_prefix('"') {
        return unquote(&q[..q.len().saturating_sub(1)]).map(Operand::Str);
    }
    if let Some(raw) = t.strip_prefix('`') {
        return Ok(Operand::Str(raw[..raw.len().saturating_sub(1)].to_string()));
    }
    match t {
        "true" | "false" => return Ok(Operand::Bool(t == "true")),
        _ if t.starts_with('$') => return Err(format!("variables ('{t}') are not supported")),
        _ if KEYWORDS.contains(&t) => return Err(format!("'{t}' is not supported")),
        _ => {}
    }
    if let Some((_, f)) = FUNCS.iter().find(|(n, _)| *n == t) {
        return Ok(Operand::Func(*f));
    }
    let number = match t.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => t.parse::<i64>().ok(),
    };
    number
        .map(Operand::Int)
        .ok_or_else(|| format!("function \"{t}\" not defined"))
}

/// Whether a run's data has the field `path` (`["Group", "a"]`).
fn known(path: &[String]) -> bool {
    FIELDS
        .iter()
        .any(|f| f.len() == path.len() && f.iter().zip(path).all(|(want, got)| *want == "*" || want == got))
}

/// Calls `each` with the path of every field `nodes` read.
fn fields(nodes: &[Node], each: &mut dyn FnMut(&[String])) {
    for n in nodes {
        match n {
            Node::Text(_) => {}
            Node::Action(p) => p.fields(each),
            Node::If(p, then, otherwise) => {
                p.fields(each);
                fields(then, each);
                fields(otherwise, each);
            }
        }
    }
}

fn unquote(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(c @ ('\\' | '"')) => out.push(c),
            other => return Err(format!("unsupported escape '\\{}'", other.unwrap_or(' '))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
