//! What `clusterdns check` prints: the effective configuration, in Corefile
//! syntax, so an operator can diff it against the Corefile they wrote.
//!
//! Every server block is printed with every directive it holds, in the
//! order the plugins run (the directive table, `config::directives`), and every
//! option of each directive with its value, defaults written out. The
//! process-wide directives (`reload`, `health`, `ready`, `prometheus`,
//! `nodelocal`, `limits { in_flight }`) are printed in the first block. One
//! function per directive; the printout loads again to the same values.

pub(crate) mod print;

pub use crate::corefile::words::duration;
pub(crate) use crate::corefile::words::Block;

#[cfg(test)]
mod tests;
