//! Corefile lexer: text → tokens with positions.
//!
//! Grammar of the token layer (the same as CoreDNS's Caddy-derived lexer):
//!
//! ```text
//! file    = { line }
//! line    = { word } ( "\n" | EOF )         -- a newline ends a directive line
//! word    = bare | quoted | "{" | "}"       -- braces count only as whole words
//! bare    = any run of non-space bytes, not starting with '#' or '"'
//! quoted  = '"' { char | '\"' | "\\" } '"'  -- may span lines, stays one word
//! comment = '#' to the end of the line      -- only where a word could start
//! env     = "{$NAME}" | "{%NAME%}"          -- replaced inside any word; unset = ""
//! ```
//!
//! `import` is resolved one level up, in [`super::blocks`], because it needs
//! snippets and the file system.

use std::fmt;
use std::sync::Arc;

/// Where a token starts: `FILE:LINE:COL`, 1-based, the form every config
/// error is reported in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pos {
    pub file: Arc<str>,
    pub line: u32,
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// A word of the Corefile after quote removal and environment substitution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    pub pos: Pos,
    pub quoted: bool,
}

/// One lexical token. `Eol` separates directive lines so that spliced-in
/// imports keep their own line structure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    Word(Word),
    Open(Pos),
    Close(Pos),
    Eol,
}

/// A lexing error (only an unterminated quote is possible).
#[derive(Debug, Clone)]
pub struct LexError {
    pub pos: Pos,
    pub message: String,
}

/// Lexes `src` (named `file` in positions) into tokens.
pub fn lex(file: &Arc<str>, src: &str) -> Result<Vec<Tok>, LexError> {
    Lexer {
        file: file.clone(),
        chars: src.chars().collect(),
        i: 0,
        line: 1,
        col: 1,
        out: Vec::new(),
    }
    .run()
}

struct Lexer {
    file: Arc<str>,
    chars: Vec<char>,
    i: usize,
    line: u32,
    col: u32,
    out: Vec<Tok>,
}

impl Lexer {
    fn pos(&self) -> Pos {
        Pos {
            file: self.file.clone(),
            line: self.line,
            col: self.col,
        }
    }

    fn bump(&mut self) -> Option<char> {
        let c = *self.chars.get(self.i)?;
        self.i += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    fn end_line(&mut self) {
        if !matches!(self.out.last(), None | Some(Tok::Eol)) {
            self.out.push(Tok::Eol);
        }
    }

    fn run(mut self) -> Result<Vec<Tok>, LexError> {
        while let Some(c) = self.peek() {
            match c {
                '\n' => {
                    self.bump();
                    self.end_line();
                }
                c if c.is_whitespace() => {
                    self.bump();
                }
                '#' => {
                    while !matches!(self.peek(), None | Some('\n')) {
                        self.bump();
                    }
                }
                '"' => self.quoted()?,
                _ => self.bare(),
            }
        }
        self.end_line();
        Ok(self.out)
    }

    fn quoted(&mut self) -> Result<(), LexError> {
        let pos = self.pos();
        self.bump();
        let mut text = String::new();
        loop {
            match self.bump() {
                None => {
                    return Err(LexError {
                        pos,
                        message: "unterminated quoted string".into(),
                    })
                }
                Some('"') => break,
                Some('\\') if matches!(self.peek(), Some('"' | '\\')) => {
                    text.extend(self.bump());
                }
                Some(c) => text.push(c),
            }
        }
        self.out.push(Tok::Word(Word {
            text: substitute_env(&text),
            pos,
            quoted: true,
        }));
        Ok(())
    }

    fn bare(&mut self) {
        let pos = self.pos();
        let mut text = String::new();
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                break;
            }
            text.push(c);
            self.bump();
        }
        let tok = match text.as_str() {
            "{" => Tok::Open(pos),
            "}" => Tok::Close(pos),
            _ => Tok::Word(Word {
                text: substitute_env(&text),
                pos,
                quoted: false,
            }),
        };
        self.out.push(tok);
    }
}

/// Replaces `{$NAME}` and `{%NAME%}` with the environment variable's value
/// (empty when unset, as CoreDNS does).
fn substitute_env(text: &str) -> String {
    if !text.contains("{$") && !text.contains("{%") {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let parsed = env_ref(tail, "{$", "}").or_else(|| env_ref(tail, "{%", "%}"));
        match parsed {
            Some((name, used)) => {
                out.push_str(&std::env::var(name).unwrap_or_default());
                rest = &tail[used..];
            }
            None => {
                out.push('{');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn env_ref<'a>(tail: &'a str, open: &str, close: &str) -> Option<(&'a str, usize)> {
    let inner = tail.strip_prefix(open)?;
    let end = inner.find(close)?;
    let name = &inner[..end];
    let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some((name, open.len() + end + close.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(src: &str) -> Vec<String> {
        let file: Arc<str> = Arc::from("t");
        lex(&file, src)
            .unwrap_or_default()
            .into_iter()
            .map(|t| match t {
                Tok::Word(w) => w.text,
                Tok::Open(_) => "{".into(),
                Tok::Close(_) => "}".into(),
                Tok::Eol => "\\n".into(),
            })
            .collect()
    }

    #[test]
    fn lines_braces_comments_and_quotes() {
        let got = words(".:53 { # comment\n  log \"a b\" x#y\n}\n\n");
        assert_eq!(got, [".:53", "{", "\\n", "log", "a b", "x#y", "\\n", "}", "\\n"]);
    }

    #[test]
    fn positions_are_one_based() {
        let file: Arc<str> = Arc::from("Corefile");
        let toks = lex(&file, "a\n  bb").unwrap_or_default();
        let Some(Tok::Word(w)) = toks.get(2) else {
            panic!("expected a word, got {toks:?}");
        };
        assert_eq!(w.pos.to_string(), "Corefile:2:3");
    }

    #[test]
    fn environment_substitution() {
        std::env::set_var("CLUSTERDNS_LEXER_TEST", "cluster.local");
        assert_eq!(words("{$CLUSTERDNS_LEXER_TEST}:53"), ["cluster.local:53", "\\n"]);
        assert_eq!(words("{%CLUSTERDNS_LEXER_TEST%}"), ["cluster.local", "\\n"]);
        assert_eq!(words("{$CLUSTERDNS_UNSET_VAR}x"), ["x", "\\n"]);
        assert_eq!(words("a{b}"), ["a{b}", "\\n"]);
    }

    #[test]
    fn unterminated_quote_is_an_error_with_position() {
        let file: Arc<str> = Arc::from("f");
        let err = lex(&file, "x \"abc").err().map(|e| e.pos.to_string());
        assert_eq!(err.as_deref(), Some("f:1:3"));
    }
}
