//! How `clusterdns check` prints `nsid`: its DATA, the host name written out.

use crate::corefile::words::{quote, Block};

pub(crate) fn nsid(b: &mut Block, data: Option<&str>) {
    if let Some(data) = data {
        b.line(1, format_args!("nsid {}", quote(data)));
    }
}
