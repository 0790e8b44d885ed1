//! Size rules for all of `src/`: no file longer than [`MAX_FILE_LINES`],
//! and no function outside test code longer than [`MAX_FN_LINES`] (from
//! its `fn` line to its closing brace). The functions are found by
//! counting braces, with strings, characters and comments taken out first.

use std::path::Path;

pub const MAX_FILE_LINES: usize = 400;
pub const MAX_FN_LINES: usize = 60;

/// Every `.rs` file under `src`, as (path relative to `src`, text).
pub fn read(src: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(src)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&path).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

/// One file or function over its limit.
#[derive(Debug, Clone)]
pub struct Oversize {
    /// What it is, without a line number (which moves with every edit):
    /// `src/app.rs` or `src/app.rs: fn block`.
    pub key: String,
    pub len: usize,
    pub limit: usize,
    /// Where and how much: `src/app.rs:318: fn block is 96 lines, more than 60`.
    pub message: String,
}

/// Every file and function of `files` over its limit.
pub fn oversize(files: &[(String, String)]) -> Vec<Oversize> {
    let mut found = Vec::new();
    for (path, text) in files {
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() > MAX_FILE_LINES {
            found.push(Oversize {
                key: format!("src/{path}"),
                len: lines.len(),
                limit: MAX_FILE_LINES,
                message: format!("src/{path}: {} lines, more than {MAX_FILE_LINES}", lines.len()),
            });
        }
        if path.ends_with("tests.rs") || path.contains("/tests/") {
            continue;
        }
        for (name, at, len) in functions(&lines) {
            if len > MAX_FN_LINES {
                found.push(Oversize {
                    key: format!("src/{path}: fn {name}"),
                    len,
                    limit: MAX_FN_LINES,
                    message: format!("src/{path}:{at}: fn {name} is {len} lines, more than {MAX_FN_LINES}"),
                });
            }
        }
    }
    found
}

/// The functions of a file before its test module: (name, line, length).
fn functions(lines: &[&str]) -> Vec<(String, usize, usize)> {
    let code: Vec<String> = lines.iter().map(|l| strip(l)).collect();
    let end = (0..code.len())
        .find(|&i| {
            code[i].trim() == "#[cfg(test)]" && code.get(i + 1).is_some_and(|n| n.trim_start().starts_with("mod "))
        })
        .unwrap_or(code.len());
    let mut out = Vec::new();
    for start in 0..end {
        let Some(name) = fn_name(&code[start]) else { continue };
        let mut depth = 0i32;
        let mut opened = false;
        for (i, line) in code.iter().enumerate().take(end).skip(start) {
            for c in line.chars() {
                match c {
                    '{' => (depth, opened) = (depth + 1, true),
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if opened && depth <= 0 {
                out.push((name.clone(), start + 1, i - start + 1));
                break;
            }
            if !opened && line.trim_end().ends_with(';') {
                break; // a declaration without a body
            }
        }
    }
    out
}

/// The name of the function a line starts, if it starts one.
fn fn_name(line: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "fn")?;
    let before_ok = words[..at]
        .iter()
        .all(|w| w.starts_with("pub") || matches!(*w, "const" | "async" | "unsafe" | "extern" | "\"C\""));
    let name: String = words
        .get(at + 1)?
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (before_ok && !name.is_empty()).then_some(name)
}

/// A line without its comment, strings and character literals.
fn strip(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                while let Some(s) = chars.next() {
                    match s {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                out.push_str("\"\"");
            }
            '\'' => {
                // a char literal ('x', '\n', '{') or a lifetime ('a)
                let rest: String = chars.clone().take(4).collect();
                let len = if rest.starts_with('\\') {
                    rest.find('\'').map(|i| i + 1)
                } else if rest.chars().nth(1) == Some('\'') {
                    Some(2)
                } else {
                    None
                };
                if let Some(n) = len {
                    for _ in 0..n {
                        chars.next();
                    }
                    out.push_str("' '");
                } else {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}
