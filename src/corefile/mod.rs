//! The Corefile's syntax, below what any directive means: the lexer,
//! server blocks and `import`, a directive's arguments and options block
//! read by one table-driven reader, the two expression languages some
//! directives take (CoreDNS's `expr` and Go templates), the words `check`
//! prints settings in, and the one error type, every error with
//! `FILE:LINE:COL`. A directive's parser (`config`, the plugin homes)
//! reads its lines with these; nothing here knows a directive's name.

pub mod args;
pub mod blocks;
pub mod expr;
pub mod gotmpl;
pub mod imports;
pub mod lexer;
pub mod options;
pub mod problem;
pub mod values;
pub mod words;
