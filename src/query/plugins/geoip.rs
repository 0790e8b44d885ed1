//! `geoip DBFILE [{ edns-subnet }]` (CoreDNS's `plugin/geoip`): the
//! client's address, or the address of the request's EDNS Client Subnet
//! option with `edns-subnet`, looked up in a MaxMind DB (`.mmdb`) file;
//! what the record holds becomes metadata labels (`geoip/city/name`,
//! `geoip/country/code`, ...) that `view`'s `metadata()` and `log`'s
//! `{/LABEL}` read through the block's `metadata`.
//!
//! A City-schema database (its type names a City, Country or Enterprise
//! database) gives the city, country, continent, location, postal and
//! subdivision labels; an ASN-schema one (`ASN`, `ISP`) gives
//! `geoip/asn/number` and `geoip/asn/org`. Values are strings, numbers in
//! base 10; an address the database does not hold gets the empty values
//! (`0` for the ASN number, `false` for the EU flag), as CoreDNS's reader
//! gives. The plugin answers nothing: the router asks it only through a
//! block's `metadata`, so a block without `geoip` runs nothing of it.

pub mod db;
pub mod setup;
pub mod subnet;

pub use db::Geoip;
