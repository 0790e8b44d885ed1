//! A value an expression computes: expr-lang's int, float, string,
//! bool, array and nil, printed as expr-lang prints them.

use std::fmt;

/// A value of the expr language.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    Array(Vec<Value>),
    Nil,
}

impl fmt::Display for Value {
    /// As Go's templates print the value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(n) => write!(f, "{n}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => f.write_str(s),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Array(items) => {
                let parts: Vec<String> = items.iter().map(ToString::to_string).collect();
                write!(f, "[{}]", parts.join(" "))
            }
            Value::Nil => f.write_str("<nil>"),
        }
    }
}
