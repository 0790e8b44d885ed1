//! Tokens of an expression, each with its byte offset: numbers, strings
//! in single or double quotes, names (keywords are names the parser
//! knows), and operators.

use super::typing::CompileError;

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Int(i64),
    Float(f64),
    Str(String),
    Name(String),
    Op(&'static str),
}

/// Operators, longest first.
const OPS: [&str; 22] = [
    "==", "!=", "<=", ">=", "&&", "||", "<", ">", "+", "-", "*", "/", "%", "!", "?", ":", ",", "(", ")", "[", "]", "#",
];

pub fn tokens(src: &str) -> Result<Vec<(usize, Tok)>, CompileError> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let tok = if c == b'\'' || c == b'"' {
            let (s, end) = string(src, i)?;
            i = end;
            Tok::Str(s)
        } else if c.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.' || bytes[i] == b'_') {
                i += 1;
            }
            number(&src[start..i]).ok_or_else(|| CompileError {
                offset: start,
                message: format!("invalid number '{}'", &src[start..i]),
            })?
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'$') {
                i += 1;
            }
            Tok::Name(src[start..i].to_string())
        } else if let Some(op) = OPS.iter().find(|op| src[i..].starts_with(**op)) {
            i += op.len();
            Tok::Op(op)
        } else {
            let ch = src[i..].chars().next().unwrap_or('?');
            return Err(CompileError {
                offset: start,
                message: format!("unexpected character '{ch}'"),
            });
        };
        out.push((start, tok));
    }
    Ok(out)
}

fn number(text: &str) -> Option<Tok> {
    let clean = text.replace('_', "");
    if let Some(hex) = clean.strip_prefix("0x") {
        return i64::from_str_radix(hex, 16).ok().map(Tok::Int);
    }
    if let Ok(n) = clean.parse::<i64>() {
        return Some(Tok::Int(n));
    }
    clean
        .parse::<f64>()
        .ok()
        .filter(|_| clean.contains(['.', 'e']))
        .map(Tok::Float)
}

/// A quoted string from `at` (its quote); the text and the offset after it.
fn string(src: &str, at: usize) -> Result<(String, usize), CompileError> {
    let quote = src[at..].chars().next().unwrap_or('"');
    let mut out = String::new();
    let mut chars = src[at + 1..].char_indices();
    while let Some((k, c)) = chars.next() {
        match c {
            c if c == quote => return Ok((out, at + 1 + k + 1)),
            '\\' => match chars.next().map(|(_, c)| c) {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(c @ ('\\' | '\'' | '"')) => out.push(c),
                other => {
                    return Err(CompileError {
                        offset: at + 1 + k,
                        message: format!("invalid escape '\\{}'", other.unwrap_or(' ')),
                    })
                }
            },
            c => out.push(c),
        }
    }
    Err(CompileError {
        offset: at,
        message: "literal not terminated".into(),
    })
}
