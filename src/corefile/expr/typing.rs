//! The static types and the operators' typing rules: which operand types
//! an operator takes and what it yields, each misuse a [`CompileError`]
//! at its offset with Go's wording (`invalid operation: ... (mismatched
//! types ...)`).

/// A value's static type (`Any` where only the run knows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Int,
    Float,
    Str,
    Bool,
    Array,
    Nil,
    Any,
}

impl Ty {
    pub(super) fn name(self) -> &'static str {
        match self {
            Ty::Int => "int",
            Ty::Float => "float",
            Ty::Str => "string",
            Ty::Bool => "bool",
            Ty::Array => "array",
            Ty::Nil => "nil",
            Ty::Any => "interface",
        }
    }

    pub(super) fn numeric(self) -> bool {
        matches!(self, Ty::Int | Ty::Float | Ty::Any)
    }
}

/// A compile error: the message and the byte offset in the source.
#[derive(Debug, Clone, PartialEq)]
pub struct CompileError {
    pub offset: usize,
    pub message: String,
}

/// An error at `offset`.
pub fn fail<T>(offset: usize, message: String) -> Result<T, CompileError> {
    Err(CompileError { offset, message })
}

pub fn want(got: Ty, want: Ty, at: usize, op: &str) -> Result<(), CompileError> {
    if got == want || got == Ty::Any {
        return Ok(());
    }
    fail(
        at,
        format!("invalid operation: {op} on {} (want {})", got.name(), want.name()),
    )
}

pub fn check_cmp(op: &str, l: Ty, r: Ty, at: usize) -> Result<(), CompileError> {
    let any = l == Ty::Any || r == Ty::Any;
    let ok = match op {
        "==" | "!=" => any || l == r || (l.numeric() && r.numeric()) || l == Ty::Nil || r == Ty::Nil,
        "<" | "<=" | ">" | ">=" => any || (l.numeric() && r.numeric()) || (l == Ty::Str && r == Ty::Str),
        "in" => matches!(r, Ty::Array | Ty::Any),
        _ => matches!(l, Ty::Str | Ty::Any) && matches!(r, Ty::Str | Ty::Any),
    };
    if ok {
        return Ok(());
    }
    fail(
        at,
        format!(
            "invalid operation: {op} (mismatched types {} and {})",
            l.name(),
            r.name()
        ),
    )
}

pub fn arith_type(op: &str, l: Ty, r: Ty, at: usize) -> Result<Ty, CompileError> {
    let ty = match (op, l, r) {
        ("+", Ty::Str, Ty::Str) => Some(Ty::Str),
        ("+", Ty::Str | Ty::Any, Ty::Str | Ty::Any) => Some(Ty::Any),
        ("%", Ty::Int | Ty::Any, Ty::Int | Ty::Any) => Some(Ty::Int),
        ("%", ..) => None,
        ("/", l, r) if l.numeric() && r.numeric() => Some(Ty::Float),
        (_, Ty::Int, Ty::Int) => Some(Ty::Int),
        (_, l, r) if l.numeric() && r.numeric() => Some(if l == Ty::Float || r == Ty::Float {
            Ty::Float
        } else {
            Ty::Any
        }),
        _ => None,
    };
    ty.map_or_else(
        || {
            fail(
                at,
                format!(
                    "invalid operation: {op} (mismatched types {} and {})",
                    l.name(),
                    r.name()
                ),
            )
        },
        Ok,
    )
}
