//! A Corefile as `migrate` rewrites it: server blocks, directives and their
//! options as written, with the source's comments, `import` lines and
//! snippets kept as they are (not expanded, as loading would) and each
//! change carrying the note `migrate` prints above it.
//!
//! ```text
//! doc    = { top }
//! top    = block | line                      -- a top-level `import FILE`
//! block  = key { key } "{" { item } "}"      -- snippets `(NAME) {` too
//! item   = NAME { arg } [ "{" { item } "}" ] -- options may nest
//! ```
//!
//! Built from the Corefile lexer's tokens (`corefile::lexer`); `{$ENV}`
//! references are kept as written, not substituted.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::corefile::lexer::{lex, Pos, Tok, Word};
use crate::corefile::problem::ConfigError;

/// Stands for the `{` of `{$NAME}`/`{%NAME%}` while lexing, so that the
/// lexer keeps environment references as text (same length in chars).
pub const ENV_OPEN: char = '\u{E000}';

/// A Corefile being migrated.
#[derive(Debug, Clone, Default)]
pub struct Doc {
    pub tops: Vec<Top>,
    /// The source's comments by line: `(whole line?, text from '#')`.
    pub comments: BTreeMap<u32, (bool, String)>,
}

impl Doc {
    /// Whether anything carries a note (was changed, removed or added).
    pub fn changed(&self) -> bool {
        fn item(i: &Item) -> bool {
            !i.notes.is_empty() || i.options.iter().flatten().any(item)
        }
        self.tops.iter().any(|t| match t {
            Top::Block(b) => !b.notes.is_empty() || b.items.iter().any(item),
            Top::Line(i) => item(i),
        })
    }
}

/// A top-level entry.
#[derive(Debug, Clone)]
pub enum Top {
    Block(Block),
    Line(Item),
}

/// A server block (or snippet) with its keys.
#[derive(Debug, Clone)]
pub struct Block {
    pub keys: Vec<Word>,
    pub items: Vec<Item>,
    /// The source line of the closing brace (comments before it stay inside).
    pub close_line: u32,
    /// `# migrate:` notes printed above the block.
    pub notes: Vec<String>,
}

/// A directive or an option line.
#[derive(Debug, Clone)]
pub struct Item {
    pub name: Word,
    pub args: Vec<Word>,
    /// The `{ ... }` block, if the line opens one.
    pub options: Option<Vec<Item>>,
    pub close_line: u32,
    /// `# migrate:` notes printed above the line.
    pub notes: Vec<String>,
    /// Removed: only its notes are printed, where it stood.
    pub gone: bool,
    /// Added by `migrate`: the source's comments on its line are not its own.
    pub added: bool,
}

impl Item {
    /// A line `migrate` adds; `at` is where what caused it stands.
    pub fn new(at: &Pos, name: &str, args: &[&str]) -> Item {
        Item {
            name: word(at, name),
            args: args.iter().map(|a| word(at, a)).collect(),
            options: None,
            close_line: at.line,
            notes: Vec::new(),
            gone: false,
            added: true,
        }
    }

    /// The line removed, with `note` printed in its place.
    pub fn remove(&mut self, note: String) {
        self.gone = true;
        self.notes.push(note);
    }

    /// The options still present.
    pub fn live_options(&self) -> impl Iterator<Item = &Item> {
        self.options.iter().flatten().filter(|o| !o.gone)
    }

    /// The args as one string, as written after the name.
    pub fn args_text(&self) -> String {
        self.args.iter().map(|a| a.text.as_str()).collect::<Vec<_>>().join(" ")
    }

    /// `NAME ARGS` as one string.
    pub fn text(&self) -> String {
        if self.args.is_empty() {
            self.name.text.clone()
        } else {
            format!("{} {}", self.name.text, self.args_text())
        }
    }
}

/// A word `migrate` writes, placed at `at`.
pub fn word(at: &Pos, text: &str) -> Word {
    Word {
        text: text.to_string(),
        pos: at.clone(),
        quoted: false,
    }
}

/// Parses Corefile text. `shift` moves every position by `(lines, cols)`
/// (a Corefile inside a ConfigMap's YAML); `file` names the source.
pub fn parse(file: &Arc<str>, src: &str, shift: (u32, u32)) -> Result<Doc, Vec<ConfigError>> {
    let kept = keep_env_refs(src);
    let mut toks = lex(file, &kept).map_err(|e| vec![ConfigError::new(&moved(&e.pos, shift), e.message)])?;
    for t in &mut toks {
        match t {
            Tok::Word(w) => w.pos = moved(&w.pos, shift),
            Tok::Open(p) | Tok::Close(p) => *p = moved(p, shift),
            Tok::Eol => {}
        }
    }
    let mut g = Grouper {
        toks: toks.into_iter().peekable(),
        errors: Vec::new(),
    };
    let tops = g.tops();
    if !g.errors.is_empty() {
        return Err(g.errors);
    }
    let comments = comments(src).into_iter().map(|(l, c)| (l + shift.0, c)).collect();
    Ok(Doc { tops, comments })
}

fn moved(p: &Pos, (lines, cols): (u32, u32)) -> Pos {
    Pos {
        file: p.file.clone(),
        line: p.line + lines,
        col: p.col + cols,
    }
}

fn keep_env_refs(src: &str) -> String {
    src.replace("{$", &format!("{ENV_OPEN}$"))
        .replace("{%", &format!("{ENV_OPEN}%"))
}

/// Comments by source line: `#` where a word could start, outside quotes.
fn comments(src: &str) -> BTreeMap<u32, (bool, String)> {
    let mut out = BTreeMap::new();
    let mut quoted = false;
    for (n, line) in src.lines().enumerate() {
        let mut prev_space = true;
        for (i, c) in line.char_indices() {
            match c {
                '"' => quoted = !quoted,
                '#' if !quoted && prev_space => {
                    let whole = line[..i].trim().is_empty();
                    out.insert(n as u32 + 1, (whole, line[i..].trim_end().to_string()));
                    break;
                }
                _ => {}
            }
            prev_space = c.is_whitespace();
        }
    }
    out
}

struct Grouper<I: Iterator<Item = Tok>> {
    toks: std::iter::Peekable<I>,
    errors: Vec<ConfigError>,
}

impl<I: Iterator<Item = Tok>> Grouper<I> {
    fn tops(&mut self) -> Vec<Top> {
        let mut tops = Vec::new();
        let mut keys: Vec<Word> = Vec::new();
        while let Some(tok) = self.toks.next() {
            match tok {
                Tok::Word(w) => keys.push(w),
                Tok::Eol if keys.first().is_some_and(|k| k.text == "import") => {
                    let mut words = std::mem::take(&mut keys);
                    let name = words.remove(0);
                    tops.push(Top::Line(line_item(name, words, None, 0)));
                }
                Tok::Eol => {}
                Tok::Open(pos) if keys.is_empty() => self.error(&pos, "'{' without a server block key before it"),
                Tok::Open(_) => {
                    let (items, close_line) = self.items(false);
                    let keys = std::mem::take(&mut keys).into_iter().flat_map(split_keys).collect();
                    tops.push(Top::Block(Block {
                        keys,
                        items,
                        close_line,
                        notes: Vec::new(),
                    }));
                }
                Tok::Close(pos) => self.error(&pos, "unexpected '}'"),
            }
        }
        if let Some(k) = keys.first() {
            let msg = format!("server block '{}' has no '{{ ... }}' body", k.text);
            self.error(&k.pos.clone(), &msg);
        }
        tops
    }

    /// Lines up to the closing brace: the items and the brace's line. In a
    /// directive's block (`nested`) the brace may end the last option's line.
    fn items(&mut self, nested: bool) -> (Vec<Item>, u32) {
        let mut out = Vec::new();
        let mut words: Vec<Word> = Vec::new();
        loop {
            match self.toks.next() {
                None => {
                    let at = words
                        .first()
                        .map(|w| w.pos.clone())
                        .or(out.last().map(|i: &Item| i.name.pos.clone()));
                    if let Some(p) = at {
                        self.error(&p, "unclosed '{': missing '}'");
                    }
                    return (out, u32::MAX);
                }
                Some(Tok::Word(w)) => words.push(w),
                Some(Tok::Eol) if words.is_empty() => {}
                Some(Tok::Eol) => {
                    let name = words.remove(0);
                    out.push(line_item(name, std::mem::take(&mut words), None, 0));
                }
                Some(Tok::Open(pos)) if words.is_empty() => self.error(&pos, "'{' without a directive before it"),
                Some(Tok::Open(_)) => {
                    let name = words.remove(0);
                    let (opts, close) = self.items(true);
                    out.push(line_item(name, std::mem::take(&mut words), Some(opts), close));
                }
                Some(Tok::Close(pos)) => {
                    if !words.is_empty() && nested {
                        let name = words.remove(0);
                        out.push(line_item(name, std::mem::take(&mut words), None, 0));
                    } else if !words.is_empty() {
                        self.error(&pos, "a server block's '}' must stand on its own line");
                    }
                    return (out, pos.line);
                }
            }
        }
    }

    fn error(&mut self, pos: &Pos, msg: &str) {
        self.errors.push(ConfigError::new(pos, msg));
    }
}

fn line_item(name: Word, args: Vec<Word>, options: Option<Vec<Item>>, close_line: u32) -> Item {
    Item {
        name,
        args,
        options,
        close_line,
        notes: Vec::new(),
        gone: false,
        added: false,
    }
}

/// `a,b` keys are two keys, as the loader reads them.
fn split_keys(w: Word) -> Vec<Word> {
    w.text
        .split(',')
        .filter(|k| !k.is_empty())
        .map(|k| Word {
            text: k.to_string(),
            ..w.clone()
        })
        .collect()
}
