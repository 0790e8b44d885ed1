//! `secrets FILE`: keys in BIND's `named.conf` form, as CoreDNS reads them:
//!
//! ```text
//! key "example." {
//!     algorithm hmac-sha256;   # read and ignored, as CoreDNS does
//!     secret "X28hl0BOfAL5G0jsmJWSacrwn7YRm2f6U5brnzwWEus=";
//! };
//! ```
//!
//! Comments (`#`, `//`, `/* */`) are skipped. Every mistake is reported at
//! its `FILE:LINE:COL`.

use std::path::Path;
use std::sync::Arc;

use hickory_proto::rr::Name;

use super::setup::{KeyConfig, Secret};
use crate::corefile::lexer::Pos;
use crate::corefile::problem::ConfigError;

/// One token: `{`, `}`, `;`, a quoted string or a bare word.
struct Token {
    text: String,
    pos: Pos,
}

/// Splits `text` into tokens, skipping blanks and comments.
fn tokens(text: &str, file: &Arc<str>) -> Vec<Token> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let (mut i, mut line, mut col) = (0, 1u32, 1u32);
    let pos = |line, col| Pos {
        file: file.clone(),
        line,
        col,
    };
    let step = |c: char, line: &mut u32, col: &mut u32| {
        if c == '\n' {
            (*line, *col) = (*line + 1, 1);
        } else {
            *col += 1;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let rest = |n: usize| chars.get(i + n).copied();
        let skip_to = |stop: &dyn Fn(usize) -> bool, i: &mut usize, line: &mut u32, col: &mut u32| {
            while *i < chars.len() && !stop(*i) {
                step(chars[*i], line, col);
                *i += 1;
            }
        };
        if c == '#' || (c == '/' && rest(1) == Some('/')) {
            skip_to(&|j| chars[j] == '\n', &mut i, &mut line, &mut col);
        } else if c == '/' && rest(1) == Some('*') {
            let s = i;
            skip_to(
                &|j| j >= s + 2 && chars[j - 2] == '*' && chars[j - 1] == '/',
                &mut i,
                &mut line,
                &mut col,
            );
        } else if c.is_whitespace() {
            step(c, &mut line, &mut col);
            i += 1;
        } else {
            let at = pos(line, col);
            let start = i;
            let end = |j: usize| match c {
                '"' => j > start && chars[j - 1] == '"' && j - 1 > start,
                '{' | '}' | ';' => j > start,
                _ => chars[j].is_whitespace() || "{};\"".contains(chars[j]),
            };
            skip_to(&end, &mut i, &mut line, &mut col);
            let text: String = chars[start..i].iter().collect();
            out.push(Token { text, pos: at });
        }
    }
    out
}

/// The keys of `path` (`None` when it cannot be read: reported at `at`,
/// the `secrets` line).
pub fn read(path: &Path, at: &Pos, errors: &mut Vec<ConfigError>) -> Option<Vec<(KeyConfig, Pos)>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            errors.push(ConfigError::new(
                at,
                format!("tsig: cannot read {}: {e}", path.display()),
            ));
            return None;
        }
    };
    let file: Arc<str> = path.display().to_string().into();
    let before = errors.len();
    let keys = parse(&tokens(&text, &file), &file, errors);
    (errors.len() == before).then_some(keys)
}

/// `key NAME { (algorithm ALG; | secret "KEY";)* };` repeated.
fn parse(tokens: &[Token], file: &Arc<str>, errors: &mut Vec<ConfigError>) -> Vec<(KeyConfig, Pos)> {
    let mut keys: Vec<(KeyConfig, Pos)> = Vec::new();
    let mut at = 0;
    let end = Pos {
        file: file.clone(),
        line: tokens.last().map_or(1, |t| t.pos.line),
        col: tokens.last().map_or(1, |t| t.pos.col),
    };
    let mut fail = |pos: &Pos, message: String| {
        errors.push(ConfigError::new(pos, format!("tsig: {message}")));
    };
    while at < tokens.len() {
        let Some(key) = statement(tokens, &mut at, &end, &mut fail) else {
            return keys;
        };
        if keys.iter().any(|(k, _)| k.name == key.0.name) {
            fail(&key.1, format!("key '{}' redefined", key.0.name));
            return keys;
        }
        keys.push(key);
    }
    keys
}

/// One `key` statement from `tokens[*at..]`.
fn statement(
    tokens: &[Token],
    at: &mut usize,
    end: &Pos,
    fail: &mut dyn FnMut(&Pos, String),
) -> Option<(KeyConfig, Pos)> {
    let mut next = |want: Option<&str>, fail: &mut dyn FnMut(&Pos, String)| -> Option<&Token> {
        let Some(t) = tokens.get(*at) else {
            fail(
                end,
                format!("unexpected end of file, expected {}", want.unwrap_or("a value")),
            );
            return None;
        };
        *at += 1;
        match want {
            Some(w) if t.text != w => {
                fail(&t.pos, format!("unexpected '{}', expected '{w}'", t.text));
                None
            }
            _ => Some(t),
        }
    };
    next(Some("key"), fail)?;
    let name_token = next(None, fail)?;
    let text = name_token.text.trim_matches('"');
    let Some(name) = Name::from_ascii(text).ok().filter(|_| !text.is_empty()) else {
        fail(
            &name_token.pos,
            format!("'{}' is not a valid key name", name_token.text),
        );
        return None;
    };
    let name = Name::from_ascii(format!("{}.", name.to_ascii().trim_end_matches('.')).to_lowercase()).ok()?;
    let name_pos = name_token.pos.clone();
    next(Some("{"), fail)?;
    let mut secret = None;
    loop {
        let t = next(None, fail)?;
        match t.text.as_str() {
            "}" => break,
            "algorithm" => {
                next(None, fail)?;
            }
            "secret" => {
                let value = next(None, fail)?;
                match Secret::decode(value.text.trim_matches('"')) {
                    Some(s) => secret = Some(s),
                    None => {
                        fail(&value.pos, format!("the secret of key '{name}' is not base64"));
                        return None;
                    }
                }
            }
            other => {
                fail(
                    &t.pos,
                    format!("unexpected '{other}', expected 'algorithm', 'secret' or '}}'"),
                );
                return None;
            }
        }
        next(Some(";"), fail)?;
    }
    if tokens.get(*at).is_some_and(|t| t.text == ";") {
        *at += 1;
    }
    let Some(secret) = secret else {
        fail(&name_pos, format!("key '{name}' has no secret"));
        return None;
    };
    Some((KeyConfig { name, secret }, name_pos))
}
