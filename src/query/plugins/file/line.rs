//! A line of the block's zone plugin: what each directive serving zones
//! the way `file` does gives it (a `file` line here; the others in their
//! homes), started into its zones when the block is built.

use std::fmt::Debug;

use hickory_proto::rr::Name;

use crate::corefile::words::Block;
use crate::query::plugins::file::print;
use crate::query::plugins::file::setup::FileConfig;
use crate::query::plugins::file::zone::ZoneFile;

/// One line of a directive whose zones the block's zone plugin serves:
/// a `file` line, or one of a directive serving zones the same way
/// (parsed in its own home).
pub trait Line: Debug + Send + Sync {
    /// The directive, as in the table.
    fn directive(&self) -> &'static str;

    /// Its directive's place among the zone directives of the table: the
    /// block's lines are started in this order, and of equally long
    /// origins the first line's answers.
    fn rank(&self) -> u8;

    /// Its lines for `clusterdns check`.
    fn print(&self, b: &mut Block);

    /// Its zones, loaded (or being filled) now and kept up to date.
    fn start(&self) -> ZoneFile;

    /// The origins `transfer` may send (`auto`: the zones its zones are
    /// found under).
    fn transferred(&self) -> &[Name] {
        &[]
    }
}

impl Line for FileConfig {
    fn directive(&self) -> &'static str {
        "file"
    }

    fn rank(&self) -> u8 {
        0
    }

    fn print(&self, b: &mut Block) {
        print::file(b, self);
    }

    fn start(&self) -> ZoneFile {
        ZoneFile::new(self.clone())
    }

    fn transferred(&self) -> &[Name] {
        &self.zones
    }
}
