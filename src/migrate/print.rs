//! Writes a migrated [`Doc`] as Corefile text: four spaces a level, each
//! `# migrate:` note on its own line above what it explains (or where a
//! removed line stood), the source's comments where they were. Beside the
//! text, a [`LineMap`] says where each output word came from, so an error
//! found in the output is reported at its place in the input.

use super::doc::{Block, Doc, Item, Top, ENV_OPEN};
use crate::corefile::lexer::{Pos, Word};

/// For each output line (index 0 is line 1): its words' output columns
/// (1-based) and their source positions.
#[derive(Debug, Default, Clone)]
pub struct LineMap(pub Vec<Vec<(u32, Pos)>>);

impl LineMap {
    /// Where output `line:col` came from in the source, if anywhere.
    pub fn source(&self, line: u32, col: u32) -> Option<Pos> {
        let words = self.0.get(line.checked_sub(1)? as usize)?;
        let (start, pos) = words.iter().rev().find(|(c, _)| *c <= col).or(words.first())?;
        let mut p = pos.clone();
        p.col += col.saturating_sub(*start);
        Some(p)
    }
}

/// The text and its line map.
pub fn render(doc: &Doc) -> (String, LineMap) {
    let mut w = Writer {
        doc,
        out: String::new(),
        map: LineMap::default(),
        cursor: 0,
    };
    for (i, top) in doc.tops.iter().enumerate() {
        if i > 0 {
            w.blank();
        }
        match top {
            Top::Block(b) => w.block(b),
            Top::Line(item) => w.item(item, 0),
        }
    }
    w.comments_before(u32::MAX, 0);
    (w.out, w.map)
}

struct Writer<'d> {
    doc: &'d Doc,
    out: String,
    map: LineMap,
    /// Source comments on lines up to this one are written.
    cursor: u32,
}

impl Writer<'_> {
    fn block(&mut self, b: &Block) {
        let first = b.keys.first().map_or(0, |k| k.pos.line);
        self.comments_before(first, 0);
        for n in &b.notes {
            self.note(n, 0);
        }
        let mut line = Line::new(0);
        for k in &b.keys {
            line.word(k);
        }
        line.raw("{");
        if first > self.cursor {
            line.trailing(self.trailing(first));
        }
        self.cursor = self.cursor.max(first);
        self.emit(line);
        for item in &b.items {
            self.item(item, 1);
        }
        self.comments_before(b.close_line, 1);
        self.close(0, b.close_line);
    }

    fn item(&mut self, item: &Item, depth: usize) {
        let at = item.name.pos.line;
        if !item.added {
            self.comments_before(at, depth);
        }
        for n in &item.notes {
            self.note(n, depth);
        }
        if item.gone {
            // A comment at the end of a removed line stays, on a line of its own.
            if let Some(c) = self.trailing(at).filter(|_| !item.added && at > self.cursor) {
                let mut line = Line::new(depth);
                line.raw(&c);
                self.emit(line);
            }
            self.cursor = self
                .cursor
                .max(if item.options.is_some() { item.close_line } else { at });
            return;
        }
        let mut line = Line::new(depth);
        line.word(&item.name);
        for a in &item.args {
            line.word(a);
        }
        let opts: Vec<&Item> = item.options.iter().flatten().collect();
        // `{ }` stays as written; a block every option left loses its braces.
        let open = item.options.as_ref().is_some_and(|o| o.is_empty()) || opts.iter().any(|o| !o.gone);
        if open {
            line.raw("{");
        }
        if !item.added && at > self.cursor {
            line.trailing(self.trailing(at));
            self.cursor = at;
        }
        self.emit(line);
        if !open {
            // Notes of removed options go below the line that lost them.
            for o in opts {
                self.item(o, depth);
            }
            return;
        }
        for o in opts {
            self.item(o, depth + 1);
        }
        if !item.added {
            self.comments_before(item.close_line, depth + 1);
        }
        if item.added {
            self.emit(Line::closing(depth));
        } else {
            self.close(depth, item.close_line);
        }
    }

    /// The closing brace of source line `at`, with the comment after it.
    fn close(&mut self, depth: usize, at: u32) {
        let mut line = Line::closing(depth);
        if at > self.cursor && at != u32::MAX {
            line.trailing(self.trailing(at));
            self.cursor = at;
        }
        self.emit(line);
    }

    fn note(&mut self, note: &str, depth: usize) {
        let mut line = Line::new(depth);
        line.raw(&format!("# migrate: {note}"));
        self.emit(line);
    }

    /// Writes the whole-line comments before source line `before`.
    fn comments_before(&mut self, before: u32, depth: usize) {
        let from = self.cursor;
        let texts: Vec<(u32, String)> = self
            .doc
            .comments
            .range(from.saturating_add(1)..before.max(from.saturating_add(1)))
            .filter(|(_, (whole, _))| *whole)
            .map(|(l, (_, t))| (*l, t.clone()))
            .collect();
        for (l, t) in texts {
            let mut line = Line::new(depth);
            line.raw(&t);
            self.emit(line);
            self.cursor = self.cursor.max(l);
        }
    }

    fn trailing(&self, line: u32) -> Option<String> {
        match self.doc.comments.get(&line) {
            Some((false, t)) => Some(t.clone()),
            _ => None,
        }
    }

    fn blank(&mut self) {
        self.out.push('\n');
        self.map.0.push(Vec::new());
    }

    fn emit(&mut self, line: Line) {
        self.out.push_str(&line.text);
        self.out.push('\n');
        self.map.0.push(line.words);
    }
}

struct Line {
    text: String,
    words: Vec<(u32, Pos)>,
}

impl Line {
    fn new(depth: usize) -> Line {
        Line {
            text: "    ".repeat(depth),
            words: Vec::new(),
        }
    }

    fn closing(depth: usize) -> Line {
        let mut l = Line::new(depth);
        l.text.push('}');
        l
    }

    fn sep(&mut self) {
        if !self.text.trim().is_empty() {
            self.text.push(' ');
        }
    }

    fn word(&mut self, w: &Word) {
        self.sep();
        self.words.push((self.text.chars().count() as u32 + 1, w.pos.clone()));
        self.text.push_str(&quote(w));
    }

    fn raw(&mut self, s: &str) {
        self.sep();
        self.text.push_str(s);
    }

    fn trailing(&mut self, comment: Option<String>) {
        if let Some(c) = comment {
            self.raw(&c);
        }
    }
}

/// A word as Corefile text: quoted when it was, or when it must be.
pub fn quote(w: &Word) -> String {
    let text = w.text.replace(ENV_OPEN, "{");
    let needs = w.quoted || text.is_empty() || text.chars().any(char::is_whitespace) || text.starts_with('#');
    if !needs {
        return text;
    }
    // The lexer reads `\"` and `\\` as escapes and keeps any other `\`:
    // escape a `\` only where it would be read as one.
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::from("\"");
    for (i, c) in chars.iter().enumerate() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' if matches!(chars.get(i + 1), None | Some('"' | '\\')) => out.push_str("\\\\"),
            c => out.push(*c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::doc::parse;

    #[test]
    fn words_are_quoted_when_they_must_be_and_positions_map_back() {
        let file: std::sync::Arc<str> = std::sync::Arc::from("in");
        let doc = parse(&file, "a.:53 {\n  log  \"x y\"   {$E} # c\n}\n", (0, 0)).expect("parses");
        let (text, map) = render(&doc);
        assert_eq!(text, "a.:53 {\n    log \"x y\" {$E} # c\n}\n");
        assert_eq!(map.source(2, 5).map(|p| p.to_string()).as_deref(), Some("in:2:3"));
        assert_eq!(map.source(2, 9).map(|p| p.to_string()).as_deref(), Some("in:2:8"));
    }
}
