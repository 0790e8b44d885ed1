//! The README's rule for tests: no test bounds a wall-clock time a busy
//! machine moves. Stated as what can be read in the source: no assertion
//! compares a measured time (`elapsed()`, or anything against a
//! `Duration`) as at most something, but the `HANG` ceiling that only a
//! hang reaches. A lower bound (`>=`) stays allowed: a busy machine only
//! makes a wait longer. String and char literals are skipped.

/// `(file:line, assertion)` for every `assert!` in `files` whose condition
/// bounds a time from above.
pub fn upper_bounds(files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in files {
        let mut from = 0;
        while let Some(at) = text[from..].find("assert!(") {
            let start = from + at + "assert!(".len();
            let condition = first_argument(&text[start..]);
            if bounds_time_from_above(condition) && !condition.contains("HANG") {
                let line = text[..start].matches('\n').count() + 1;
                out.push(format!("{path}:{line}: {}", squeeze(condition)));
            }
            from = start;
        }
    }
    out
}

/// The text up to the first comma or closing parenthesis at depth 0,
/// string and char literals skipped.
fn first_argument(text: &str) -> &str {
    let mut depth = 0i32;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                while let Some((_, c)) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '\'' if text[i + 1..].starts_with('\\') || text[i + 1..].chars().nth(1) == Some('\'') => {
                for (_, c) in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                }
            }
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth == 0 => return &text[..i],
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => return &text[..i],
            _ => {}
        }
    }
    text
}

/// A `<` or `<=` (not `<<`, not a generic's `<T>`) with a measured time
/// or a `Duration` on one side.
fn bounds_time_from_above(condition: &str) -> bool {
    let condition = &without_strings(condition);
    let timed = condition.contains("elapsed()") || condition.contains("Duration::");
    let b = condition.as_bytes();
    let less = (0..b.len()).any(|i| {
        b[i] == b'<'
            && b.get(i + 1) != Some(&b'<')
            && (i == 0 || b[i - 1] != b'<')
            && b.get(i + 1).is_some_and(|n| *n == b' ' || *n == b'=')
    });
    timed && less
}

/// `text` with the contents of its string literals left out.
fn without_strings(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '"' {
            while let Some(c) = chars.next() {
                match c {
                    '\\' => {
                        chars.next();
                    }
                    '"' => {
                        out.push('"');
                        break;
                    }
                    _ => {}
                }
            }
        }
    }
    out
}

fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every `.rs` file under `dir`, as (path relative to `root`, text).
pub fn read(root: &std::path::Path, dir: &std::path::Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(read(root, &p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let rel = p.strip_prefix(root).unwrap_or(&p).display().to_string();
            out.push((rel, text));
        }
    }
    out
}
