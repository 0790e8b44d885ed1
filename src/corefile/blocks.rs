//! Tokens → server blocks → directives, with `import` and snippets resolved.
//!
//! ```text
//! corefile   = { snippet | server }
//! snippet    = "(" NAME ")" "{" tokens "}"         -- spliced by `import NAME`
//! server     = key { key } "{" { directive } "}"   -- keys may span lines
//! directive  = NAME { arg } [ "{" { option } "}" ] EOL
//! option     = NAME { arg } EOL                     -- options do not nest
//! import     = "import" PATTERN EOL                 -- a snippet or a file glob,
//!                                                      relative to the Corefile
//! ```
//!
//! Every problem is collected as a [`ConfigError`]; parsing goes on so that
//! one run reports them all.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::imports::{expand_imports, take_snippets};
use super::lexer::{lex, Pos, Tok, Word};
use super::problem::ConfigError;

/// A server block as written: its keys (`ZONE[:PORT]`) and directives.
#[derive(Debug, Clone)]
pub struct RawBlock {
    pub keys: Vec<Word>,
    pub open: Pos,
    pub directives: Vec<Directive>,
}

/// A directive line, with its optional block of option lines.
#[derive(Debug, Clone)]
pub struct Directive {
    pub name: Word,
    pub args: Vec<Word>,
    pub options: Vec<Line>,
    /// Whether an options block was written, even an empty one (`multisocket`
    /// refuses any, as CoreDNS does).
    pub braces: bool,
}

/// One option line inside a directive's block.
#[derive(Debug, Clone)]
pub struct Line {
    pub name: Word,
    pub args: Vec<Word>,
}

/// Reads and parses `path` (its name as given is used in positions).
pub fn parse_file(path: &Path, errors: &mut Vec<ConfigError>) -> Vec<RawBlock> {
    let name: Arc<str> = Arc::from(path.display().to_string());
    match std::fs::read_to_string(path) {
        Ok(src) => parse_str(&name, &src, base_dir(path), errors),
        Err(e) => {
            errors.push(ConfigError::new(
                &Pos {
                    file: name,
                    line: 0,
                    col: 0,
                },
                format!("cannot read: {e}"),
            ));
            Vec::new()
        }
    }
}

/// Parses Corefile text; `dir` resolves relative `import` paths.
pub fn parse_str(file: &Arc<str>, src: &str, dir: PathBuf, errors: &mut Vec<ConfigError>) -> Vec<RawBlock> {
    let toks = match lex(file, src) {
        Ok(t) => t,
        Err(e) => {
            errors.push(ConfigError::new(&e.pos, e.message));
            return Vec::new();
        }
    };
    let mut snippets = HashMap::new();
    let toks = take_snippets(toks, &mut snippets, errors);
    let toks = expand_imports(toks, &snippets, &dir, 0, errors);
    Grouper { toks, i: 0, errors }.blocks()
}

fn base_dir(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// How a line of words ended.
#[derive(Debug, PartialEq, Eq)]
enum End {
    Eol,
    Open,
    Close(Pos),
}

struct Grouper<'e> {
    toks: Vec<Tok>,
    i: usize,
    errors: &'e mut Vec<ConfigError>,
}

impl Grouper<'_> {
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.i).cloned();
        self.i += 1;
        t
    }

    fn blocks(mut self) -> Vec<RawBlock> {
        let mut blocks = Vec::new();
        let mut keys: Vec<Word> = Vec::new();
        while let Some(tok) = self.next() {
            match tok {
                Tok::Eol => {}
                Tok::Word(w) => keys.extend(w.text.split(',').filter(|k| !k.is_empty()).map(|k| Word {
                    text: k.to_string(),
                    ..w.clone()
                })),
                Tok::Open(pos) if keys.is_empty() => {
                    self.errors.push(ConfigError::new(
                        &pos,
                        "'{' without a server block key before it (e.g. '.:53 {')",
                    ));
                    self.directives();
                }
                Tok::Open(open) => {
                    let directives = self.directives();
                    blocks.push(RawBlock {
                        keys: std::mem::take(&mut keys),
                        open,
                        directives,
                    });
                }
                Tok::Close(pos) => self.errors.push(ConfigError::new(&pos, "unexpected '}'")),
            }
        }
        if let Some(k) = keys.first() {
            self.errors.push(ConfigError::new(
                &k.pos,
                format!("server block '{}' has no '{{ ... }}' body", k.text),
            ));
        }
        blocks
    }

    /// Reads directive lines up to the block's closing brace. A directive
    /// line cannot end in the server block's `}` (CoreDNS: "Unexpected '}'").
    fn directives(&mut self) -> Vec<Directive> {
        let mut out = Vec::new();
        while let Some((mut words, end)) = self.line() {
            match end {
                End::Close(pos) => {
                    if !words.is_empty() {
                        let msg = "a server block's '}' must stand on its own line";
                        self.errors.push(ConfigError::new(&pos, msg));
                    }
                    return out;
                }
                End::Eol | End::Open => {
                    let name = words.remove(0);
                    let options = if end == End::Open { self.options() } else { Vec::new() };
                    out.push(Directive {
                        name,
                        args: words,
                        options,
                        braces: end == End::Open,
                    });
                }
            }
        }
        out
    }

    /// Reads option lines up to the directive block's `}`, which may end the
    /// last option's line (`geoip DB { edns-subnet }`, as CoreDNS reads it).
    fn options(&mut self) -> Vec<Line> {
        let mut out = Vec::new();
        while let Some((mut words, end)) = self.line() {
            if words.is_empty() {
                return out;
            }
            let name = words.remove(0);
            if end == End::Open {
                self.errors.push(ConfigError::new(
                    &name.pos,
                    format!("option '{}' cannot open a block", name.text),
                ));
                self.options();
            }
            out.push(Line { name, args: words });
            if matches!(end, End::Close(_)) {
                return out;
            }
        }
        out
    }

    /// One line's words and how it ended; words are empty only at a `}`
    /// alone. `None` at end of input (reported as unclosed).
    fn line(&mut self) -> Option<(Vec<Word>, End)> {
        let mut words: Vec<Word> = Vec::new();
        loop {
            match self.next() {
                None => {
                    let pos = words.first().map(|w| w.pos.clone());
                    if let Some(p) = pos.or_else(|| self.last_pos()) {
                        self.errors.push(ConfigError::new(&p, "unclosed '{': missing '}'"));
                    }
                    return None;
                }
                Some(Tok::Eol) if words.is_empty() => {}
                Some(Tok::Eol) => return Some((words, End::Eol)),
                Some(Tok::Word(w)) => words.push(w),
                Some(Tok::Close(pos)) => return Some((words, End::Close(pos))),
                Some(Tok::Open(pos)) => {
                    if words.is_empty() {
                        self.errors
                            .push(ConfigError::new(&pos, "'{' without a directive before it"));
                        words.push(Word {
                            text: String::new(),
                            pos,
                            quoted: false,
                        });
                    }
                    return Some((words, End::Open));
                }
            }
        }
    }

    fn last_pos(&self) -> Option<Pos> {
        self.toks.iter().rev().find_map(|t| match t {
            Tok::Word(w) => Some(w.pos.clone()),
            Tok::Open(p) | Tok::Close(p) => Some(p.clone()),
            Tok::Eol => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> (Vec<RawBlock>, Vec<String>) {
        let mut errors = Vec::new();
        let file: Arc<str> = Arc::from("Corefile");
        let blocks = parse_str(&file, src, PathBuf::new(), &mut errors);
        (blocks, errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn blocks_directives_and_options() {
        let (blocks, errors) =
            parse(".:53 cluster.local:1053 {\n errors\n kubernetes cluster.local {\n  pods insecure\n }\n}\n");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(blocks.len(), 1);
        let keys: Vec<_> = blocks[0].keys.iter().map(|k| k.text.as_str()).collect();
        assert_eq!(keys, [".:53", "cluster.local:1053"]);
        let d = &blocks[0].directives;
        assert_eq!(d[0].name.text, "errors");
        assert_eq!(d[1].args[0].text, "cluster.local");
        assert_eq!(d[1].options[0].name.text, "pods");
        assert_eq!(d[1].options[0].args[0].text, "insecure");
    }

    #[test]
    fn snippets_are_imported() {
        let (blocks, errors) = parse("(common) {\n errors\n log\n}\n.:53 {\n import common\n ready\n}\n");
        assert!(errors.is_empty(), "{errors:?}");
        let names: Vec<_> = blocks[0].directives.iter().map(|d| d.name.text.as_str()).collect();
        assert_eq!(names, ["errors", "log", "ready"]);
    }

    #[test]
    fn errors_carry_positions_and_all_are_reported() {
        let (_, errors) = parse(".:53 {\n import nothing\n}\n}\n.:54 {\n log\n");
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].starts_with("Corefile:2:9: import 'nothing'"), "{errors:?}");
        assert!(errors[1].starts_with("Corefile:4:1: unexpected '}'"), "{errors:?}");
        assert!(errors[2].contains("unclosed"), "{errors:?}");
    }

    #[test]
    fn a_directive_block_may_close_on_its_option_line() {
        let (blocks, errors) =
            parse(".:53 {\n geoip db { edns-subnet }\n forward . 1.1.1.1 { max_fails 3 }\n cache { }\n log\n}\n");
        assert!(errors.is_empty(), "{errors:?}");
        let d = &blocks[0].directives;
        let names: Vec<_> = d.iter().map(|d| d.name.text.as_str()).collect();
        assert_eq!(names, ["geoip", "forward", "cache", "log"]);
        assert_eq!(d[0].options[0].name.text, "edns-subnet");
        assert_eq!(d[1].options[0].args[0].text, "3");
        assert!(d[2].braces && d[2].options.is_empty());
    }

    #[test]
    fn a_server_block_closing_on_a_directive_line_is_refused() {
        let (_, errors) = parse(".:53 {\n whoami }\n");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("Corefile:2:9: a server block's '}'"),
            "{errors:?}"
        );
    }
}
