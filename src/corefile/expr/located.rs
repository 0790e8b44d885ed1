//! An expression as a directive writes it: its words joined by spaces (as
//! CoreDNS joins them) and compiled, a compile error reported at the
//! column of the Corefile where it is (`template`'s `var` and `expr`,
//! `view`'s `expr`).

use super::{CompileError, Program, Ty};
use crate::corefile::lexer::{Pos, Word};
use crate::corefile::problem::ConfigError;

/// `words` joined and compiled against `vars` (declared before, by name
/// and type); an error is `DIRECTIVE: could not compile expression ...`
/// at its place, or at `at` when the words give none.
pub fn compile_words(
    directive: &str,
    words: &[Word],
    at: &Pos,
    vars: &[(String, Ty)],
    errors: &mut Vec<ConfigError>,
) -> Option<Program> {
    let source = words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ");
    match Program::compile(&source, vars) {
        Ok(p) => Some(p),
        Err(CompileError { offset, message }) => {
            errors.push(ConfigError::new(
                &position(words, offset).unwrap_or_else(|| at.clone()),
                format!("{directive}: could not compile expression '{source}': {message}"),
            ));
            None
        }
    }
}

/// Where byte `offset` of the joined words is in the Corefile.
fn position(words: &[Word], mut offset: usize) -> Option<Pos> {
    for (k, w) in words.iter().enumerate() {
        let last = k + 1 == words.len();
        if offset <= w.text.len() || last {
            let mut pos = w.pos.clone();
            let inside = offset.min(w.text.len()) + usize::from(w.quoted);
            pos.col += u32::try_from(inside).unwrap_or(0);
            return Some(pos);
        }
        offset -= w.text.len() + 1;
    }
    None
}
