//! One configuration problem with its place (`FILE:LINE:COL: message`),
//! and all of one load's: every file of `config` reports through these.

use std::fmt;

use super::lexer::Pos;

/// One configuration problem, displayed as `FILE:LINE:COL: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub pos: Pos,
    pub message: String,
}

impl ConfigError {
    pub fn new(pos: &Pos, message: impl Into<String>) -> Self {
        ConfigError {
            pos: pos.clone(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.pos, self.message)
    }
}

/// All errors of one load, in file order.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub struct ConfigErrors(pub Vec<ConfigError>);
