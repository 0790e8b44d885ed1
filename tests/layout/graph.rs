//! The crate's module graph, read from its sources: every `use` tree and
//! every `crate::…`, `super::…`, `self::…` path in code, resolved to the
//! module it names. Just enough of a Rust lexer to skip comments, strings
//! and char literals, so a path in a doc comment or a message is no edge,
//! and to follow inline `mod name { … }` blocks (`use super::*` in a
//! `mod tests` names the file's own module).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module path without the leading `crate`: `["query", "tcp"]`.
pub type Module = Vec<String>;

/// Modules and the `use` edges between them.
#[derive(Debug, Default)]
pub struct Graph {
    pub modules: BTreeSet<Module>,
    /// `from → to`, with `FILE:LINE` of the first path that made it.
    pub edges: BTreeMap<(Module, Module), String>,
}

/// A file: its path, its module and its tokens with their lines.
type Parsed = (String, Module, Vec<(Tok, usize)>);

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Punct(char),
}

impl Graph {
    /// The library's graph: every `.rs` file under `src` but the binaries.
    pub fn read(src: &Path) -> Graph {
        let mut files = Vec::new();
        collect(src, src, &mut files);
        Graph::from_files(&files)
    }

    /// The graph of `(path relative to src, text)` files.
    pub fn from_files(files: &[(String, String)]) -> Graph {
        let mut g = Graph::default();
        let mut tests = Vec::new();
        let mut parsed: Vec<Parsed> = files
            .iter()
            .filter_map(|(path, text)| {
                let module = file_module(path)?;
                let toks = strip_tests(lex(text), &module, &mut tests);
                Some((path.clone(), module, toks))
            })
            .collect();
        parsed.retain(|(_, m, _)| !tests.iter().any(|t| m.starts_with(t)));
        for (_, module, toks) in &parsed {
            g.modules.insert(module.clone());
            walk(toks, module, &mut |m, _, _| {
                g.modules.insert(m.to_vec());
            });
        }
        for (path, module, toks) in &parsed {
            let mut found = Vec::new();
            walk(toks, module, &mut |m, target, line| {
                found.push((m.to_vec(), target, line))
            });
            for (from, target, line) in found {
                if let Some(to) = g.resolve(&target) {
                    if to != from && !to.is_empty() {
                        g.edges
                            .entry((from, to))
                            .or_insert_with(|| format!("src/{path}:{line}"));
                    }
                }
            }
        }
        g
    }

    /// The longest prefix of `path` that is a module.
    fn resolve(&self, path: &[String]) -> Option<Module> {
        (0..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|m| self.modules.contains(m))
    }

    /// The edges between the children of `parent` (each end cut to the
    /// child of `parent` it lies in; edges to `parent` itself dropped).
    pub fn children_edges(&self, parent: &[String]) -> BTreeMap<(Module, Module), String> {
        let child = |m: &Module| (m.len() > parent.len() && m.starts_with(parent)).then(|| m[..=parent.len()].to_vec());
        let mut out = BTreeMap::new();
        for ((from, to), at) in &self.edges {
            if let (Some(a), Some(b)) = (child(from), child(to)) {
                if a != b {
                    out.entry((a, b)).or_insert_with(|| at.clone());
                }
            }
        }
        out
    }

    /// Whether any module under `from` uses any module under `to`, and where.
    pub fn reaches(&self, from: &[String], to: &[String]) -> Vec<String> {
        self.edges
            .iter()
            .filter(|((a, b), _)| a.starts_with(from) && b.starts_with(to))
            .map(|((a, b), at)| format!("{} -> {} ({at})", name(a), name(b)))
            .collect()
    }
}

/// `crate::a::b`.
pub fn name(m: &[String]) -> String {
    std::iter::once("crate")
        .chain(m.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("::")
}

/// Every cycle of `edges` (its strongly connected components of more
/// than one module), each with the edges inside it.
pub fn cycles(edges: &BTreeMap<(Module, Module), String>) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&Module> = edges.keys().flat_map(|(a, b)| [a, b]).collect();
    let reach = |start: &Module| {
        let mut seen = BTreeSet::from([start.clone()]);
        let mut todo = vec![start.clone()];
        while let Some(n) = todo.pop() {
            for (a, b) in edges.keys() {
                if *a == n && seen.insert(b.clone()) {
                    todo.push(b.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&Module, BTreeSet<Module>> = nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in &nodes {
        let component: BTreeSet<&Module> = nodes
            .iter()
            .copied()
            .filter(|m| reached[n].contains(*m) && reached[m].contains(*n))
            .collect();
        if component.len() > 1 && done.insert(component.clone()) {
            let inside = edges
                .iter()
                .filter(|((a, b), _)| component.contains(a) && component.contains(b))
                .map(|((a, b), at)| format!("{} -> {} ({at})", name(a), name(b)))
                .collect();
            out.push(inside);
        }
    }
    out
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("read src").filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(root)
                .expect("under src")
                .to_string_lossy()
                .into_owned();
            out.push((rel, std::fs::read_to_string(&path).expect("read source")));
        }
    }
}

/// The module a file defines (`None`: a binary's root).
fn file_module(path: &str) -> Option<Module> {
    if path == "main.rs" || path.starts_with("bin/") {
        return None;
    }
    let path = path.strip_suffix(".rs")?;
    let mut parts: Module = path.split('/').map(str::to_string).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    Some(parts)
}

/// The tokens without `#[cfg(test)]` items (test code may reach
/// anywhere); the modules of `#[cfg(test)] mod name;` files go to `tests`.
fn strip_tests(toks: Vec<(Tok, usize)>, module: &Module, tests: &mut Vec<Module>) -> Vec<(Tok, usize)> {
    let attr: Vec<Tok> = ["#", "[", "cfg", "(", "test", ")", "]"]
        .iter()
        .map(|t| match *t {
            "cfg" | "test" => Tok::Ident(t.to_string()),
            p => Tok::Punct(p.chars().next().unwrap_or(' ')),
        })
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if toks.len() - i < attr.len() || toks[i..i + attr.len()].iter().map(|t| &t.0).ne(attr.iter()) {
            out.push(toks[i].clone());
            i += 1;
            continue;
        }
        i += attr.len();
        let item = i;
        let mut depth = 0;
        while let Some((tok, _)) = toks.get(i) {
            i += 1;
            match tok {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') if depth == 1 => break,
                Tok::Punct('}') => depth -= 1,
                Tok::Punct(';') if depth == 0 => {
                    let words: Vec<&Tok> = toks[item..i].iter().map(|t| &t.0).collect();
                    if let [.., Tok::Ident(m), Tok::Ident(name), Tok::Punct(';')] = words[..] {
                        if m == "mod" {
                            tests.push([module.clone(), vec![name.clone()]].concat());
                        }
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    out
}

/// Calls `found(module, path, line)` for each path the tokens use, with
/// the (inline) module it appears in; a `mod name {` alone reports the
/// module with an empty path.
fn walk(toks: &[(Tok, usize)], file: &Module, found: &mut dyn FnMut(&[String], Module, usize)) {
    let mut module = file.clone();
    let mut open: Vec<usize> = Vec::new(); // brace depth at which each inline mod opened
    let mut depth = 0;
    let mut i = 0;
    while i < toks.len() {
        let (tok, line) = (&toks[i].0, toks[i].1);
        match tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if open.last() == Some(&depth) {
                    open.pop();
                    module.pop();
                }
            }
            Tok::Ident(k) if k == "mod" => {
                if let (Some((Tok::Ident(m), _)), Some((Tok::Punct('{'), _))) = (toks.get(i + 1), toks.get(i + 2)) {
                    module.push(m.clone());
                    found(&module, Vec::new(), line);
                    open.push(depth);
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            Tok::Ident(k) if k == "use" => {
                let mut paths = Vec::new();
                i = use_tree(toks, i + 1, Vec::new(), &mut paths);
                for p in paths {
                    if let Some(abs) = absolute(&module, &p, true) {
                        found(&module, abs, line);
                    }
                }
                continue;
            }
            Tok::Ident(k)
                if matches!(k.as_str(), "crate" | "super" | "self")
                    && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Sep) =>
            {
                let after_sep = i > 0 && toks[i - 1].0 == Tok::Sep;
                let mut path = Vec::new();
                while let Some((Tok::Ident(s), _)) = toks.get(i) {
                    path.push(s.clone());
                    if toks.get(i + 1).map(|t| &t.0) != Some(&Tok::Sep) {
                        break;
                    }
                    i += 2;
                }
                if !after_sep {
                    if let Some(abs) = absolute(&module, &path, false) {
                        found(&module, abs, line);
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// Reads one `use` tree from `i` (after `use`), each leaf path into
/// `out`; returns the index after the tree's end.
fn use_tree(toks: &[(Tok, usize)], mut i: usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    while let Some((tok, _)) = toks.get(i) {
        match tok {
            Tok::Sep => i += 1,
            Tok::Ident(s) if s == "as" => {
                out.push(prefix);
                return i + 2;
            }
            Tok::Ident(s) if s == "self" && !prefix.is_empty() => i += 1,
            Tok::Ident(s) => {
                prefix.push(s.clone());
                i += 1;
            }
            Tok::Punct('{') => {
                i += 1;
                while let Some((tok, _)) = toks.get(i) {
                    match tok {
                        Tok::Punct('}') => return i + 1,
                        Tok::Punct(',') => i += 1,
                        _ => i = use_tree(toks, i, prefix.clone(), out),
                    }
                }
                return i;
            }
            Tok::Punct('*') => i += 1,
            _ => {
                out.push(prefix);
                return i;
            }
        }
    }
    i
}

/// `path` as seen from `module`, from the crate root; `None` for a path
/// that is not the crate's. In a `use`, a path without `crate`, `self` or
/// `super` is relative (`use udp::Worker;` where `mod udp;` is declared);
/// one naming another crate resolves to `module` itself and is no edge.
fn absolute(module: &Module, path: &[String], in_use: bool) -> Option<Module> {
    let mut abs = module.clone();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            abs.clear();
            rest = &path[1..];
        }
        Some("self") => rest = &path[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                abs.pop()?;
                rest = &rest[1..];
            }
        }
        Some(_) if in_use => {}
        _ => return None,
    }
    abs.extend(rest.iter().cloned());
    Some(abs)
}

/// Tokens with their line numbers; comments, strings, chars and
/// lifetimes dropped.
fn lex(text: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut nest = 0;
            loop {
                if i >= c.len() {
                    break;
                }
                if c[i] == '/' && at(i + 1) == '*' {
                    nest += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    nest -= 1;
                    i += 2;
                    if nest == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = string(&c, i, &mut line);
        } else if ch == '\'' {
            // a char literal ('x', '\n', '\u{..}') or a lifetime ('a)
            if at(i + 1) == '\\' {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let raw = word.contains('r') && at(i) == '#' && matches!(at(i + 1), '"' | '#');
            if matches!(word.as_str(), "r" | "b" | "br") && (at(i) == '"' || raw) {
                i = string(&c, start, &mut line); // r"…", b"…", r#"…"#
            } else {
                out.push((Tok::Ident(word), line));
            }
        } else if ch == ':' && at(i + 1) == ':' {
            out.push((Tok::Sep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// Skips a string literal starting at `i` (`"…"`, `b"…"`, `r#"…"#`,
/// `br"…"`); returns the index after it.
fn string(c: &[char], mut i: usize, line: &mut usize) -> usize {
    let raw = c[i] == 'r' || (c[i] == 'b' && c.get(i + 1) == Some(&'r'));
    while i < c.len() && c[i] != '"' && c[i] != '#' {
        i += 1;
    }
    let mut hashes = 0;
    while c.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    i += 1; // the opening quote
    while i < c.len() {
        match c[i] {
            '\\' if !raw => i += 2,
            '"' if (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) => return i + 1 + hashes,
            ch => {
                *line += usize::from(ch == '\n');
                i += 1;
            }
        }
    }
    i
}
