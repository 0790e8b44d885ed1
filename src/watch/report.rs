//! How the watch path tells an operator what went wrong: a description
//! of each API failure naming what to fix, and errors logged at most once
//! per [`LOG_EVERY`] per kind with the rest counted. Shared by the
//! followers ([`super::follow`]) and the API source ([`super::api`]).

use std::time::{Duration, Instant};

use super::wire::Failure;

/// The least time between two logged errors of one kind.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// An operator-facing description of a watch error.
pub fn describe(e: &Failure, resource: &str, token_file: Option<&std::path::Path>) -> String {
    let token = token_file.map_or_else(
        || "the configured credentials".to_string(),
        |p| format!("the token in {}", p.display()),
    );
    match e.code() {
        Some(401) => {
            format!("watching {resource}: {e}; the API server rejected {token} (it is read again for each request)")
        }
        Some(403) => format!(
            "watching {resource}: {e}; RBAC must allow the verbs list and watch on {resource} for this service account"
        ),
        Some(429) => format!("watching {resource}: {e}; the API server is overloaded or starting, retrying as it asks"),
        _ => format!("watching {resource}: {e}; retrying, serving the last known state"),
    }
}

/// Logs an error at most once per [`LOG_EVERY`], counting the rest.
#[derive(Default)]
pub struct RateLimited {
    last: Option<Instant>,
    suppressed: u64,
}

impl RateLimited {
    pub fn error(&mut self, message: &str) {
        if self.last.is_some_and(|t| t.elapsed() < LOG_EVERY) {
            self.suppressed += 1;
            return;
        }
        let more = std::mem::take(&mut self.suppressed);
        if more > 0 {
            tracing::error!(target: "kubernetes", "{message} ({more} more since the last report)");
        } else {
            tracing::error!(target: "kubernetes", "{message}");
        }
        self.last = Some(Instant::now());
    }
}
