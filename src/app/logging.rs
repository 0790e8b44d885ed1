//! The `debug` directive's hold on the log filter: the binary that owns
//! the subscriber says how to turn debug events on and off; each config
//! load says whether they are.

/// What turns debug log events on and off (`debug`): set once by the
/// binary that owns the log subscriber.
static LOG_DEBUG: std::sync::OnceLock<Box<dyn Fn(bool) + Send + Sync>> = std::sync::OnceLock::new();

/// Sets what [`log_debug`] calls (the binary's log filter).
pub fn on_log_debug(f: impl Fn(bool) + Send + Sync + 'static) {
    let _ = LOG_DEBUG.set(Box::new(f));
}

/// Debug log events on or off, as the loaded config's `debug` says.
pub(super) fn log_debug(on: bool) {
    if let Some(f) = LOG_DEBUG.get() {
        f(on);
    }
}
