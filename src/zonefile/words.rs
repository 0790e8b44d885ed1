//! The words of zone-file text, entry by entry, as RFC 1035 section 5.1
//! groups them: an entry is a `$` directive or one record, which
//! parentheses may spread over several lines; a quoted string is one word,
//! a `;` starts a comment to the end of its line, `\` escapes the next
//! character. The passes of [`super::text`] and [`super::case`] find the
//! words they rewrite here (by byte range) and [`splice`] rewrites them.

use std::borrow::Cow;
use std::ops::Range;

/// One directive or record of the text.
#[derive(Debug)]
pub(super) struct Entry {
    /// Whether the first word starts its line (is an owner or a `$` directive).
    pub owned: bool,
    /// The byte ranges of the words (parentheses and comments are none).
    pub words: Vec<Range<usize>>,
    /// Where the entry ends: the line break that closes it, or the text's end.
    pub end: usize,
}

impl Entry {
    /// An entry without words, with room for a record's usual few.
    fn new() -> Entry {
        Entry {
            owned: false,
            words: Vec::with_capacity(8),
            end: 0,
        }
    }

    /// Whether the entry is a `$` directive (`$ORIGIN`, `$TTL`, `$INCLUDE`).
    pub fn directive(&self, text: &str) -> bool {
        self.owned && self.words.first().is_some_and(|w| text[w.clone()].starts_with('$'))
    }

    /// The owner word of a record entry that writes one.
    pub fn owner(&self) -> Option<Range<usize>> {
        self.owned.then(|| self.words.first().cloned()).flatten()
    }

    /// The index in [`Entry::words`] of a record's type: the first word
    /// after the owner that is neither a class nor a TTL.
    pub fn type_at(&self, text: &str) -> Option<usize> {
        let skip = usize::from(self.owned);
        let at = self.words.iter().skip(skip).position(|r| {
            let w = &text[r.clone()];
            let class = ["IN", "CH", "HS", "CS"].iter().any(|c| w.eq_ignore_ascii_case(c));
            !class && !w.starts_with(|c: char| c.is_ascii_digit())
        })?;
        Some(at + skip)
    }
}

/// Every entry of `text` that has a word, in order.
pub(super) fn entries(text: &str) -> Vec<Entry> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut entry = Entry::new();
    let (mut depth, mut line, mut i) = (0usize, 0usize, 0usize);
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\n' => {
                if depth == 0 && !entry.words.is_empty() {
                    entry.end = i;
                    out.push(std::mem::replace(&mut entry, Entry::new()));
                }
                line = i + 1;
                i += 1;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'(' => (depth, i) = (depth + 1, i + 1),
            b')' => (depth, i) = (depth.saturating_sub(1), i + 1),
            b';' => {
                i = bytes[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(bytes.len(), |n| i + n)
            }
            _ => {
                let end = word_end(bytes, i);
                if entry.words.is_empty() {
                    entry.owned = i == line;
                }
                entry.words.push(i..end);
                i = end;
            }
        }
    }
    if !entry.words.is_empty() {
        entry.end = bytes.len();
        out.push(entry);
    }
    out
}

/// `text` with each entry that parentheses spread over several lines
/// written on its first line (its words joined by blanks, its comments
/// dropped), and as many line breaks after it as it spanned, so later
/// lines keep their numbers: hickory's lexer misreads quoted strings
/// inside parentheses across lines (a DKIM key's TXT kept its quotes and
/// lost its text after a `;`), and reads them right on one line.
pub(super) fn one_line(text: &str) -> Cow<'_, str> {
    if !text.contains('(') {
        return Cow::Borrowed(text);
    }
    let mut edits = Vec::new();
    for e in entries(text) {
        let (Some(first), Some(last)) = (e.words.first(), e.words.last()) else {
            continue;
        };
        let span = first.start..e.end.max(last.end);
        let breaks = |r: &Range<usize>| text[r.clone()].matches('\n').count();
        let outside = breaks(&span) - e.words.iter().map(breaks).sum::<usize>();
        if outside == 0 {
            continue;
        }
        let mut joined = e.words.iter().map(|w| &text[w.clone()]).collect::<Vec<_>>().join(" ");
        joined.push_str(&"\n".repeat(outside));
        edits.push((span, joined));
    }
    splice(text, edits)
}

/// Where the word starting at `start` ends: at a blank, a parenthesis or a
/// comment outside quotes, or the end of the text.
fn word_end(bytes: &[u8], start: usize) -> usize {
    let (mut i, mut quoted) = (start, false);
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 1,
            b'"' => quoted = !quoted,
            b' ' | b'\t' | b'\r' | b'\n' | b'(' | b')' | b';' if !quoted => break,
            _ => {}
        }
        i += 1;
    }
    i.min(bytes.len())
}

/// `text` with each range replaced by its new text (ranges in order, not
/// overlapping).
pub(super) fn splice(text: &str, edits: Vec<(Range<usize>, String)>) -> Cow<'_, str> {
    if edits.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 64);
    let mut last = 0;
    for (r, new) in edits {
        out.push_str(&text[last..r.start]);
        out.push_str(&new);
        last = r.end;
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<(bool, Vec<&str>)> {
        let entries = entries(text);
        entries
            .iter()
            .map(|e| (e.owned, e.words.iter().map(|r| &text[r.clone()]).collect()))
            .collect()
    }

    #[test]
    fn an_entry_over_several_lines_is_written_on_its_first() {
        let text =
            "@ IN SOA ns ( 1 ; serial\n 2 3 4 5 )\nt TXT ( \"a; b\" ; one\n \"c\" )\n\nx A 1.2.3.4\ny TXT \"(\"\n";
        assert_eq!(
            one_line(text),
            "@ IN SOA ns 1 2 3 4 5\n\nt TXT \"a; b\" \"c\"\n\n\nx A 1.2.3.4\ny TXT \"(\"\n"
        );
        assert!(matches!(one_line("x A 1.2.3.4\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn parentheses_quotes_comments_and_escapes_make_entries_and_words() {
        let text = "$ORIGIN a.\n@ IN SOA ns ( 1 2 ; serial\n 3 4 5 )\n\tTXT \"x ; (y\" z\\ w ; note\n\nb\\;c A 1.2.3.4";
        assert_eq!(
            words(text),
            vec![
                (true, vec!["$ORIGIN", "a."]),
                (true, vec!["@", "IN", "SOA", "ns", "1", "2", "3", "4", "5"]),
                (false, vec!["TXT", "\"x ; (y\"", "z\\ w"]),
                (true, vec!["b\\;c", "A", "1.2.3.4"]),
            ]
        );
        let e = entries(text);
        assert!(e[0].directive(text) && !e[1].directive(text));
        assert_eq!(e[1].type_at(text), Some(2));
        assert_eq!(e[2].type_at(text), Some(0));
        assert_eq!(e[2].owner(), None);
    }
}
