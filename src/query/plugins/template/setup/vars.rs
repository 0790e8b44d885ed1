//! `var NAME EXPRESSION` and `expr EXPRESSION` of a `template`: each
//! expression compiled at load against the variables declared before it
//! (see [`crate::corefile::expr`]); a compile error points at the column of
//! the expression where it is.

use crate::corefile::args::Args;
use crate::corefile::expr::{self, Program, Ty};
use crate::corefile::lexer::{Pos, Word};
use crate::corefile::problem::ConfigError;

/// A `var`: its name and program.
#[derive(Debug, Clone)]
pub struct Var {
    pub name: String,
    pub program: Program,
}

/// `var NAME EXPRESSION...`.
pub fn var(a: &Args<'_>, vars: &mut Vec<Var>, errors: &mut Vec<ConfigError>) {
    if !a.count(2, usize::MAX, errors) {
        return;
    }
    let name = &a.args[0];
    if !expr::valid_name(&name.text) {
        errors.push(ConfigError::new(
            &name.pos,
            format!("template: invalid variable name \"{}\"", name.text),
        ));
        return;
    }
    if expr::reserved(&name.text) || vars.iter().any(|v| v.name == name.text) {
        errors.push(ConfigError::new(
            &name.pos,
            format!(
                "template: variable name \"{}\" is reserved or already declared",
                name.text
            ),
        ));
        return;
    }
    if let Some(program) = compile(&a.args[1..], a.pos(), vars, errors) {
        vars.push(Var {
            name: name.text.clone(),
            program,
        });
    }
}

/// `expr EXPRESSION...`.
pub fn condition(a: &Args<'_>, vars: &[Var], exprs: &mut Vec<Program>, errors: &mut Vec<ConfigError>) {
    if !a.count(1, usize::MAX, errors) {
        return;
    }
    if let Some(program) = compile(a.args, a.pos(), vars, errors) {
        exprs.push(program);
    }
}

/// The words joined and compiled against the variables before them.
fn compile(words: &[Word], at: &Pos, vars: &[Var], errors: &mut Vec<ConfigError>) -> Option<Program> {
    let declared: Vec<(String, Ty)> = vars.iter().map(|v| (v.name.clone(), v.program.ty)).collect();
    expr::compile_words("template", words, at, &declared, errors)
}
