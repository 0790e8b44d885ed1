//! The part of the expr language (expr-lang.org, which CoreDNS's `view`
//! and `template` use) that a `template`'s `var NAME EXPRESSION` and
//! `expr EXPRESSION` may write, compiled once at load with static types
//! (an unknown name, a wrong argument or mismatched operands is a load
//! error, as in CoreDNS) and run per matching query ([`Program::run`]).
//!
//! ```text
//! expr    = or [ "?" expr ":" expr ]
//! or      = and { ("||" | "or") and }
//! and     = cmp { ("&&" | "and") cmp }
//! cmp     = sum { ("==" | "!=" | "<" | "<=" | ">" | ">=" | ["not"] "in"
//!                 | "contains" | "startsWith" | "endsWith" | "matches") sum }
//! sum     = product { ("+" | "-") product }
//! product = unary { ("*" | "/" | "%") unary }
//! unary   = ("!" | "not" | "-") unary | postfix
//! postfix = primary { "[" expr "]" }
//! primary = INT | FLOAT | 'STRING' | "STRING" | true | false | nil | "#"
//!         | VAR | FUNC "(" [expr { "," expr }] ")" | "(" expr ")" | "[" [expr { "," expr }] "]"
//! ```
//!
//! Functions: the query's `name()`, `type()`, `class()`, `client_ip()`,
//! and the request's `proto()`, `size()`, `id()`, `opcode()`, `do()`,
//! `bufsize()`, `port()`, and the address it came in on, `server_ip()`,
//! `server_port()` ([`Wire`]);
//! `incidr(ip, cidr)`, `metadata(label)` (what the block's `metadata`
//! knows of the query, "" without one), `group(name|index)`; the builtins `len`, `int`,
//! `float`, `string`, `lower`, `upper`, `trim`, `trimPrefix`, `trimSuffix`,
//! `replace`, `split`, `join`, `indexOf`, `hasPrefix`, `hasSuffix`, and
//! `any`, `all`, `none`, `one`, `filter`, `map`, `count` over an array with
//! a predicate on `#`. `server_ip()` is the address the query came in on
//! (over UDP with a wildcard bind, the datagram's destination, where
//! CoreDNS's `state.LocalIP()` is the unspecified address).

mod eval;
mod functions;
mod lex;
mod parse;
mod typing;
mod value;

pub use eval::{Metadata, Query, Wire};
pub use typing::{CompileError, Ty};

use crate::corefile::lexer::{Pos, Word};
use crate::corefile::problem::ConfigError;
pub use value::Value;

/// A compiled expression.
#[derive(Debug, Clone)]
pub struct Program {
    pub source: String,
    node: parse::Node,
    pub ty: Ty,
    /// Whether the value depends on the request beyond its question
    /// (`client_ip()`, `port()`, `id()`...): its answer is not memoized.
    pub uses_client: bool,
}

/// The names a `var` may not take: functions, keywords and literals.
pub fn reserved(name: &str) -> bool {
    functions::FUNCTIONS.iter().any(|f| f.0 == name)
        || [
            "true",
            "false",
            "nil",
            "let",
            "in",
            "not",
            "and",
            "or",
            "matches",
            "contains",
            "startsWith",
            "endsWith",
            "if",
            "else",
            "type",
        ]
        .contains(&name)
}

/// Whether `name` can name a variable (`[a-zA-Z_][a-zA-Z0-9_]*`).
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Program {
    /// Compiles `source`; `vars` are the variables declared before it, by
    /// name and type, in order (the run gets their values in that order).
    pub fn compile(source: &str, vars: &[(String, Ty)]) -> Result<Program, CompileError> {
        let tokens = lex::tokens(source)?;
        let mut p = parse::Parser::new(&tokens, vars, source.len());
        let (node, ty) = p.expr()?;
        p.end()?;
        Ok(Program {
            source: source.to_string(),
            uses_client: p.uses_client,
            node,
            ty,
        })
    }

    /// Runs the program for `query` with the values of the variables
    /// before it; an error is a failed run (the query gets SERVFAIL).
    pub fn run(&self, query: &Query<'_>, vars: &[Value]) -> Result<Value, String> {
        eval::run(&self.node, query, vars)
    }
}

/// `words` joined and compiled against `vars` (declared before, by name
/// and type); an error is `DIRECTIVE: could not compile expression ...`
/// at its place, or at `at` when the words give none.
/// (An expression as a directive writes it: `template`'s `var` and `expr`,
/// `view`'s `expr`.)
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

#[cfg(test)]
mod tests;
