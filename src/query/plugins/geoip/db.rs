//! A `geoip` database opened and read: which schemas it provides (by
//! its type, as CoreDNS's reader decides), and each label's value for an
//! address.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use maxminddb::geoip2;
use maxminddb::Reader;

impl crate::query::metadata::Provider for Geoip {
    fn reads_subnet(&self) -> bool {
        self.edns_subnet
    }

    fn value(&self, label: &str, client: IpAddr, subnet: Option<IpAddr>) -> Option<String> {
        Geoip::value(self, label, self.address(client, subnet))
    }
}

/// The labels a City-schema database gives.
pub const CITY_LABELS: [&str; 11] = [
    "geoip/city/name",
    "geoip/country/code",
    "geoip/country/name",
    "geoip/country/is_in_european_union",
    "geoip/continent/code",
    "geoip/continent/name",
    "geoip/latitude",
    "geoip/longitude",
    "geoip/timezone",
    "geoip/postalcode",
    "geoip/subdivisions/code",
];

/// The labels an ASN-schema database gives.
pub const ASN_LABELS: [&str; 2] = ["geoip/asn/number", "geoip/asn/org"];

/// The schemas a database provides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schemas {
    pub city: bool,
    pub asn: bool,
}

/// An open database and how the block reads it.
pub struct Geoip {
    pub path: PathBuf,
    /// `edns-subnet`: the ECS option's address before the client's.
    pub edns_subnet: bool,
    pub schemas: Schemas,
    reader: Reader<Vec<u8>>,
}

impl std::fmt::Debug for Geoip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Geoip")
            .field("path", &self.path)
            .field("edns_subnet", &self.edns_subnet)
            .field("schemas", &self.schemas)
            .finish()
    }
}

impl Geoip {
    /// Opens `path`; the error says why it cannot serve (CoreDNS's words
    /// where it has them).
    pub fn open(path: &Path, edns_subnet: bool) -> Result<Geoip, String> {
        let reader = Reader::open_readfile(path).map_err(|e| format!("failed to open database file: {e}"))?;
        let kind = reader.metadata().database_type.clone();
        let schemas = schemas(&kind).ok_or(format!("reader does not support the {kind:?} database type"))?;
        Ok(Geoip {
            path: path.to_path_buf(),
            edns_subnet,
            schemas,
            reader,
        })
    }

    /// The address a query is looked up by: the ECS option's (`subnet`)
    /// with `edns-subnet`, else the client's.
    pub fn address(&self, client: IpAddr, subnet: Option<IpAddr>) -> IpAddr {
        subnet.filter(|_| self.edns_subnet).unwrap_or(client)
    }

    /// The value of `label` for `addr`; `None` when the label is not one
    /// this database gives, or the lookup failed (logged at debug).
    pub fn value(&self, label: &str, addr: IpAddr) -> Option<String> {
        let found = self.reader.lookup(addr);
        let found = found.map_err(|e| tracing::debug!(target: "geoip", "lookup of {addr} failed: {e}"));
        let found = found.ok()?;
        if self.schemas.city && CITY_LABELS.contains(&label) {
            let city: Option<geoip2::City> = decoded(found.decode())?;
            return Some(city_label(&city.unwrap_or_default(), label));
        }
        if self.schemas.asn && ASN_LABELS.contains(&label) {
            let asn: Option<geoip2::Asn> = decoded(found.decode())?;
            let (number, org) = asn.map_or((None, None), |a| {
                (a.autonomous_system_number, a.autonomous_system_organization)
            });
            return Some(match label {
                "geoip/asn/number" => number.unwrap_or(0).to_string(),
                _ => org.unwrap_or("").to_string(),
            });
        }
        None
    }
}

/// A decoded record (`None` inside: the address has none, its labels
/// empty); `None`: decoding failed (logged at debug).
fn decoded<T>(r: Result<T, maxminddb::MaxMindDbError>) -> Option<T> {
    r.map_err(|e| tracing::debug!(target: "geoip", "decoding failed: {e}"))
        .ok()
}

/// The schemas a database of type `kind` provides (CoreDNS's reader's
/// list, by the words in the type's name); `None`: none it reads.
pub fn schemas(kind: &str) -> Option<Schemas> {
    let has = |w: &[&str]| w.iter().any(|w| kind.contains(w));
    let s = Schemas {
        city: has(&["City", "Country", "Enterprise", "Location"]),
        asn: has(&["ASN", "ISP"]),
    };
    (s.city || s.asn).then_some(s)
}

/// One City-schema label of `c`.
fn city_label(c: &geoip2::City<'_>, label: &str) -> String {
    let text = |s: Option<&str>| s.unwrap_or("").to_string();
    let float = |f: Option<f64>| f.map(|f| f.to_string()).unwrap_or_default();
    match label {
        "geoip/city/name" => text(c.city.names.english),
        "geoip/country/code" => text(c.country.iso_code),
        "geoip/country/name" => text(c.country.names.english),
        "geoip/country/is_in_european_union" => c.country.is_in_european_union.unwrap_or(false).to_string(),
        "geoip/continent/code" => text(c.continent.code),
        "geoip/continent/name" => text(c.continent.names.english),
        "geoip/latitude" => float(c.location.latitude),
        "geoip/longitude" => float(c.location.longitude),
        "geoip/timezone" => text(c.location.time_zone),
        "geoip/postalcode" => text(c.postal.code),
        _ => {
            let codes: Vec<&str> = c.subdivisions.iter().map(|s| s.iso_code.unwrap_or("")).collect();
            codes.join(",")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::schemas;

    /// CoreDNS's reader's database types: City-like, ASN-like, unknown.
    #[test]
    fn schemas_by_database_type() {
        assert!(schemas("DBIP-City-Lite").is_some_and(|s| s.city && !s.asn));
        assert!(schemas("GeoLite2-ASN").is_some_and(|s| s.asn && !s.city));
        assert!(schemas("GeoIP2-Enterprise").is_some_and(|s| s.city));
        assert!(schemas("UnknownDbType").is_none());
    }
}
