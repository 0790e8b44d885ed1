//! One authoritative zone loaded from an RFC 1035 zone file, as the `file`
//! plugin serves it (and `check` loads it): the records by owner and type,
//! every name that exists (owners and the empty non-terminals between them
//! and the apex), the SOA and the apex NS set kept apart as CoreDNS keeps
//! them. [`parse`] reads the file (hickory-proto's zone parser, taught
//! DNAME); [`lookup`] answers a question the way RFC 1034 section 4.3.2
//! describes with delegations, DNAME substitution (RFC 6672) and wildcards
//! (RFC 4592).
//!
//! Names are indexed lowercased; a record keeps the case CoreDNS keeps
//! (an SRV's owner and target, a PTR's, a DNAME's and a NAPTR's names as
//! the file writes them: `case`, [`parse`]). `Name`'s own equality and
//! hash ignore case, so a question in any case finds them.

mod case;
pub mod dnssec;
mod index;
pub mod lookup;
mod parse;
mod signed;
mod text;
mod words;

pub use index::Zone;
pub use lookup::{Found, Outcome};
pub(crate) use parse::{dname, dname_target};
pub use parse::{from_records, parse, parse_file};

/// Whether SOA serial `a` is newer than `b` (RFC 1982 arithmetic: they
/// wrap, and one 2^31 apart is neither).
pub fn newer(a: u32, b: u32) -> bool {
    a != b && (a.wrapping_sub(b) as i32) > 0
}

#[cfg(test)]
#[test]
fn serials_compare_as_rfc_1982_says() {
    assert!(newer(2, 1) && !newer(1, 2) && !newer(1, 1));
    assert!(newer(0, u32::MAX) && !newer(u32::MAX, 0), "wraps");
    assert!(
        newer(2_147_483_648, 1) && !newer(2_147_483_649, 1),
        "2^31 apart: not newer"
    );
}
