//! `import` and snippets, resolved on tokens before they are grouped into
//! blocks: `(NAME) { ... }` definitions are taken out and spliced where
//! `import NAME` names them; `import PATTERN` splices the files a glob
//! matches (relative to the Corefile, at most 10 deep; a glob matching
//! nothing is a warning, as in CoreDNS).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::lexer::{lex, Tok, Word};
use super::problem::ConfigError;

const MAX_IMPORT_DEPTH: usize = 10;

/// Removes `(name) { ... }` definitions at the top level and records them.
pub(super) fn take_snippets(
    toks: Vec<Tok>,
    snippets: &mut HashMap<String, Vec<Tok>>,
    errors: &mut Vec<ConfigError>,
) -> Vec<Tok> {
    let mut out = Vec::with_capacity(toks.len());
    let mut it = toks.into_iter().peekable();
    let mut at_line_start = true;
    while let Some(tok) = it.next() {
        let snippet = match &tok {
            Tok::Word(w) if at_line_start && w.text.starts_with('(') && w.text.ends_with(')') && w.text.len() > 2 => {
                Some(w.clone())
            }
            _ => None,
        };
        at_line_start = matches!(tok, Tok::Eol);
        let Some(word) = snippet else {
            out.push(tok);
            continue;
        };
        if !matches!(it.next(), Some(Tok::Open(_))) {
            errors.push(ConfigError::new(
                &word.pos,
                "a snippet definition needs '{' after its name",
            ));
            continue;
        }
        let mut depth = 1;
        let mut body = Vec::new();
        for t in it.by_ref() {
            match t {
                Tok::Open(_) => depth += 1,
                Tok::Close(_) if depth == 1 => break,
                Tok::Close(_) => depth -= 1,
                _ => {}
            }
            body.push(t);
        }
        let name = word.text[1..word.text.len() - 1].to_string();
        snippets.insert(name, body);
        at_line_start = true;
    }
    out
}

pub(super) fn expand_imports(
    toks: Vec<Tok>,
    snippets: &HashMap<String, Vec<Tok>>,
    dir: &Path,
    depth: usize,
    errors: &mut Vec<ConfigError>,
) -> Vec<Tok> {
    let mut out = Vec::with_capacity(toks.len());
    let mut i = 0;
    while i < toks.len() {
        let line_start = i == 0 || matches!(toks[i - 1], Tok::Eol);
        match &toks[i] {
            Tok::Word(w) if line_start && w.text == "import" => {
                let arg = match toks.get(i + 1) {
                    Some(Tok::Word(a)) if matches!(toks.get(i + 2), None | Some(Tok::Eol)) => a.clone(),
                    _ => {
                        errors.push(ConfigError::new(&w.pos, "import takes exactly one argument"));
                        i = skip_line(&toks, i);
                        continue;
                    }
                };
                if depth >= MAX_IMPORT_DEPTH {
                    errors.push(ConfigError::new(&w.pos, "import nested too deeply (a cycle?)"));
                } else {
                    let body = import_body(&arg, snippets, dir, errors);
                    out.extend(expand_imports(body, snippets, dir, depth + 1, errors));
                }
                i = skip_line(&toks, i);
            }
            t => {
                out.push(t.clone());
                i += 1;
            }
        }
    }
    out
}

fn skip_line(toks: &[Tok], mut i: usize) -> usize {
    while i < toks.len() && !matches!(toks[i], Tok::Eol) {
        i += 1;
    }
    i + 1
}

fn import_body(
    arg: &Word,
    snippets: &HashMap<String, Vec<Tok>>,
    dir: &Path,
    errors: &mut Vec<ConfigError>,
) -> Vec<Tok> {
    if let Some(body) = snippets.get(&arg.text) {
        let mut body = body.clone();
        body.push(Tok::Eol);
        return body;
    }
    let pattern = dir.join(&arg.text);
    let is_glob = pattern
        .file_name()
        .and_then(|f| f.to_str())
        .is_some_and(|f| f.contains('*'));
    // As CoreDNS: a glob that matches nothing (yet), also in a directory
    // that does not exist, is a warning, so an empty `custom/` directory of
    // overrides loads; a named file that does not exist is an error.
    let paths = match glob_files(&pattern) {
        Err(e) if is_glob && e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        found => found,
    };
    let paths = match paths {
        Ok(p) if !p.is_empty() => p,
        Ok(_) if is_glob => {
            tracing::warn!(target: "import", "{}: No files matching import glob pattern: {}", arg.pos, arg.text);
            return Vec::new();
        }
        Ok(_) => {
            errors.push(ConfigError::new(
                &arg.pos,
                format!("import '{}': no snippet or file of that name", arg.text),
            ));
            return Vec::new();
        }
        Err(e) => {
            errors.push(ConfigError::new(&arg.pos, format!("import '{}': {e}", arg.text)));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for path in paths {
        let name: Arc<str> = Arc::from(path.display().to_string());
        match std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|s| lex(&name, &s).map_err(|e| format!("{}: {}", e.pos, e.message)))
        {
            Ok(toks) => out.extend(toks),
            Err(e) => errors.push(ConfigError::new(&arg.pos, format!("import {}: {e}", path.display()))),
        }
    }
    out
}

/// Matches a path whose last component may hold `*` wildcards.
fn glob_files(pattern: &Path) -> std::io::Result<Vec<PathBuf>> {
    let file = pattern.file_name().and_then(|f| f.to_str()).unwrap_or_default();
    if !file.contains('*') {
        return Ok(if pattern.is_file() {
            vec![pattern.to_path_buf()]
        } else {
            Vec::new()
        });
    }
    let dir = pattern.parent().unwrap_or(Path::new("."));
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| wildcard_match(file, n)))
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    Ok(found)
}

fn wildcard_match(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => {
            name.starts_with(head)
                && (0..=name.len() - head.len()).any(|k| {
                    let rest = &name[head.len() + k..];
                    name.is_char_boundary(head.len() + k) && wildcard_match(tail, rest)
                })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::wildcard_match;

    #[test]
    fn wildcards() {
        assert!(wildcard_match("*.conf", "a.conf"));
        assert!(wildcard_match("a*b*c", "axxbyyc"));
        assert!(!wildcard_match("*.conf", "a.con"));
    }
}
