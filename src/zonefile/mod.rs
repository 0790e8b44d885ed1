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
