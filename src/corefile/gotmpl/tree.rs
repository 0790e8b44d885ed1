//! A parsed action: the pipeline, its commands and their operands, and the
//! functions a template may call; what the parser builds and
//! [`super::eval`] runs.

/// A pipeline: commands joined by `|`, each one's value the last
/// argument of the next.
#[derive(Debug, Clone)]
pub struct Pipeline(pub Vec<Command>);

impl Pipeline {
    /// Calls `each` with the path of every field the pipeline reads.
    pub fn fields(&self, each: &mut dyn FnMut(&[String])) {
        for op in self.0.iter().flat_map(|c| c.0.iter()) {
            match op {
                Operand::Field(path) => each(path),
                Operand::Sub(p) => p.fields(each),
                _ => {}
            }
        }
    }
}

/// A command: its operands (a function first, when it calls one).
#[derive(Debug, Clone)]
pub struct Command(pub Vec<Operand>);

/// One operand of a command.
#[derive(Debug, Clone)]
pub enum Operand {
    Dot,
    Field(Vec<String>),
    Str(String),
    Int(i64),
    Bool(bool),
    Func(Func),
    Sub(Pipeline),
}

/// The functions templates may call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    ParseInt,
    Index,
    Len,
    Printf,
    Print,
    Println,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Not,
}
