//! Replies replayed as bytes, before any route: the memo ([`memo`]: the
//! exact reply to a question asked before, valid until the snapshot
//! changes what it depends on) and the cache hits ([`hits`]: a reply the
//! `cache` answered, with its TTLs counted down). The handler tries them
//! in that order for a plain question the guard admits; what neither has
//! takes the full path, and its reply is remembered or learned here.

pub mod hits;
pub mod memo;
