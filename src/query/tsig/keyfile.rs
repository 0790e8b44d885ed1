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

use base64::Engine;
use hickory_proto::rr::Name;

use crate::corefile::lexer::Pos;
use crate::corefile::problem::ConfigError;

/// A shared secret: never printed (its `Debug` hides it).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub Arc<[u8]>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

impl Secret {
    /// A base64 KEY as written.
    pub fn decode(text: &str) -> Option<Secret> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(text).ok()?;
        (!bytes.is_empty()).then(|| Secret(bytes.into()))
    }

    /// A key written in the Corefile that is not base64: loaded, as CoreDNS
    /// loads it, and never verifying a request (empty, which no decoded
    /// secret is).
    pub fn unusable() -> Secret {
        Secret(Arc::from(&[][..]))
    }
}

/// One named key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyConfig {
    pub name: Name,
    pub secret: Secret,
}

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
    let end = Pos {
        file: file.clone(),
        line: tokens.last().map_or(1, |t| t.pos.line),
        col: tokens.last().map_or(1, |t| t.pos.col),
    };
    let mut c = Cursor {
        tokens,
        at: 0,
        end,
        errors,
    };
    let mut keys: Vec<(KeyConfig, Pos)> = Vec::new();
    while c.at < tokens.len() {
        let Some(key) = c.statement() else {
            return keys;
        };
        if keys.iter().any(|(k, _)| k.name == key.0.name) {
            c.fail(&key.1, format!("key '{}' redefined", key.0.name));
            return keys;
        }
        keys.push(key);
    }
    keys
}

/// Where the parse is in the tokens; the errors it reports.
struct Cursor<'a> {
    tokens: &'a [Token],
    at: usize,
    end: Pos,
    errors: &'a mut Vec<ConfigError>,
}

impl<'a> Cursor<'a> {
    fn fail(&mut self, pos: &Pos, message: String) {
        self.errors.push(ConfigError::new(pos, format!("tsig: {message}")));
    }

    /// The next token (which must be `want` when given).
    fn next(&mut self, want: Option<&str>) -> Option<&'a Token> {
        let Some(t) = self.tokens.get(self.at) else {
            let end = self.end.clone();
            self.fail(
                &end,
                format!("unexpected end of file, expected {}", want.unwrap_or("a value")),
            );
            return None;
        };
        self.at += 1;
        match want {
            Some(w) if t.text != w => {
                self.fail(&t.pos, format!("unexpected '{}', expected '{w}'", t.text));
                None
            }
            _ => Some(t),
        }
    }

    /// One `key` statement.
    fn statement(&mut self) -> Option<(KeyConfig, Pos)> {
        self.next(Some("key"))?;
        let token = self.next(None)?;
        let text = token.text.trim_matches('"').trim_end_matches('.');
        let Some(name) = Name::from_ascii(format!("{text}.").to_lowercase())
            .ok()
            .filter(|_| !text.is_empty())
        else {
            self.fail(&token.pos, format!("'{}' is not a valid key name", token.text));
            return None;
        };
        self.next(Some("{"))?;
        let secret = self.body(&name)?;
        if self.tokens.get(self.at).is_some_and(|t| t.text == ";") {
            self.at += 1;
        }
        let Some(secret) = secret else {
            self.fail(&token.pos, format!("key '{name}' has no secret"));
            return None;
        };
        Some((KeyConfig { name, secret }, token.pos.clone()))
    }

    /// A key's options up to its `}`: its secret, if it has one.
    fn body(&mut self, name: &Name) -> Option<Option<Secret>> {
        let mut secret = None;
        loop {
            let t = self.next(None)?;
            match t.text.as_str() {
                "}" => return Some(secret),
                "algorithm" => {
                    self.next(None)?;
                }
                "secret" => {
                    let value = self.next(None)?;
                    let Some(s) = Secret::decode(value.text.trim_matches('"')) else {
                        self.fail(&value.pos, format!("the secret of key '{name}' is not base64"));
                        return None;
                    };
                    secret = Some(s);
                }
                other => {
                    let message = format!("unexpected '{other}', expected 'algorithm', 'secret' or '}}'");
                    self.fail(&t.pos, message);
                    return None;
                }
            }
            self.next(Some(";"))?;
        }
    }
}
