//! The functions an expression may call, with the types of their
//! arguments and result: the table the parser types a call against and
//! `reserved` names a variable against.

use super::typing::Ty;

/// A function: name, argument types (`Any` takes anything; a predicate's
/// second argument is an expression on `#`), result type.
pub type Function = (&'static str, &'static [Ty], Ty);

pub const FUNCTIONS: [Function; 38] = [
    ("name", &[], Ty::Str),
    ("type", &[], Ty::Str),
    ("class", &[], Ty::Str),
    ("client_ip", &[], Ty::Str),
    ("proto", &[], Ty::Str),
    ("size", &[], Ty::Int),
    ("id", &[], Ty::Int),
    ("opcode", &[], Ty::Int),
    ("do", &[], Ty::Bool),
    ("bufsize", &[], Ty::Int),
    ("port", &[], Ty::Str),
    ("server_ip", &[], Ty::Str),
    ("server_port", &[], Ty::Str),
    ("incidr", &[Ty::Str, Ty::Str], Ty::Bool),
    ("metadata", &[Ty::Str], Ty::Str),
    ("group", &[Ty::Any], Ty::Str),
    ("len", &[Ty::Any], Ty::Int),
    ("int", &[Ty::Any], Ty::Int),
    ("float", &[Ty::Any], Ty::Float),
    ("string", &[Ty::Any], Ty::Str),
    ("lower", &[Ty::Str], Ty::Str),
    ("upper", &[Ty::Str], Ty::Str),
    ("trim", &[Ty::Str], Ty::Str),
    ("trimPrefix", &[Ty::Str, Ty::Str], Ty::Str),
    ("trimSuffix", &[Ty::Str, Ty::Str], Ty::Str),
    ("replace", &[Ty::Str, Ty::Str, Ty::Str], Ty::Str),
    ("split", &[Ty::Str, Ty::Str], Ty::Array),
    ("join", &[Ty::Array, Ty::Str], Ty::Str),
    ("indexOf", &[Ty::Str, Ty::Str], Ty::Int),
    ("hasPrefix", &[Ty::Str, Ty::Str], Ty::Bool),
    ("hasSuffix", &[Ty::Str, Ty::Str], Ty::Bool),
    ("any", &[Ty::Array, Ty::Bool], Ty::Bool),
    ("all", &[Ty::Array, Ty::Bool], Ty::Bool),
    ("none", &[Ty::Array, Ty::Bool], Ty::Bool),
    ("one", &[Ty::Array, Ty::Bool], Ty::Bool),
    ("filter", &[Ty::Array, Ty::Bool], Ty::Array),
    ("map", &[Ty::Array, Ty::Any], Ty::Array),
    ("count", &[Ty::Array, Ty::Bool], Ty::Int),
];

/// Functions whose value depends on the request beyond its question (the
/// answer is then not kept for a repeated question).
/// (`metadata`: a label may be the client's, `kubernetes/client-namespace`;
/// `server_ip`, `server_port`: one worker's memo serves several listeners.)
pub const PER_REQUEST: [&str; 11] = [
    "client_ip",
    "proto",
    "size",
    "id",
    "opcode",
    "do",
    "bufsize",
    "port",
    "server_ip",
    "server_port",
    "metadata",
];

/// The functions whose second argument is an expression on `#`.
pub const PREDICATES: [&str; 7] = ["any", "all", "none", "one", "filter", "map", "count"];
