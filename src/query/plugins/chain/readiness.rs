//! What `/ready` asks of a plugin it waits for.

/// A plugin that `/ready` waits for (CoreDNS's `ready.Readiness`).
pub trait Readiness: Send + Sync {
    /// The plugin's name, as `/ready` lists those not ready.
    fn name(&self) -> &'static str;

    /// Whether it is ready now.
    fn ready(&self) -> bool;
}
