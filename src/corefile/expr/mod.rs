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
//! `bufsize()`, `port()` ([`Wire`]);
//! `incidr(ip, cidr)`, `metadata(label)` (what the block's `metadata`
//! knows of the query, "" without one), `group(name|index)`; the builtins `len`, `int`,
//! `float`, `string`, `lower`, `upper`, `trim`, `trimPrefix`, `trimSuffix`,
//! `replace`, `split`, `join`, `indexOf`, `hasPrefix`, `hasSuffix`, and
//! `any`, `all`, `none`, `one`, `filter`, `map`, `count` over an array with
//! a predicate on `#`. CoreDNS's `server_ip()` and `server_port()` are
//! refused at load with the reason (the address a query came in on is not
//! kept per query).

mod eval;
mod functions;
mod lex;
mod located;
mod parse;
mod typing;
mod value;

pub use eval::{Metadata, Query, Wire};
pub use located::compile_words;
pub use typing::{CompileError, Ty};
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
        || functions::REFUSED.contains(&name)
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

#[cfg(test)]
mod tests;
