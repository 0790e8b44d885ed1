//! Where in the order a plugin answers.

/// Where in the order a plugin answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Before `rewrite` and the guard, on the question as asked.
    Early,
    /// After the guard, the early plugins asked again and `loop`'s probe, before
    /// `kubernetes`: the block's own data, on the question as `rewrite` left it.
    BeforeCluster,
    /// After the block's own data and `kubernetes`, before `cache` and
    /// `forward` (a backend such as `etcd`).
    Data,
    /// When neither `cache` nor `forward` takes the name.
    Last,
}
