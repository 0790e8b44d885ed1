//! The enums a query reports its labels with ([`Transport`], [`Plugin`],
//! [`Expansion`], a query type's slot, an rcode's slot): the hot path
//! indexes counter arrays by them and never looks a label string up. The
//! strings themselves are in the [`catalogue`](super::catalogue).

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::RecordType;

use super::catalogue::{EXPANSIONS, PLUGINS, PROTOS, RCODES, RCODE_NAMES, TYPES};

/// The transport a query arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

impl Transport {
    pub fn label(self) -> &'static str {
        PROTOS[self as usize]
    }
}

/// A label enum (`#[repr(u8)]`, variants in declaration order) and its
/// `ALL`: every variant at its discriminant, as many as the catalogue has
/// label names for (`$names`), written once for both.
macro_rules! label_enum {
    ($(#[$meta:meta])* pub enum $name:ident [$names:expr] { $($(#[$vmeta:meta])* $variant:ident,)* }) => {
        $(#[$meta])*
        #[repr(u8)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl $name {
            /// Every variant at its discriminant, as many as the catalogue
            /// has label names for.
            pub const ALL: [$name; $names.len()] = [$($name::$variant,)*];
        }
    };
}

label_enum! {
    /// Which plugin wrote a response (`plugin` label of `coredns_dns_responses_total`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum Plugin [PLUGINS] {
        /// Written by the server itself (header errors, no zone, no plugin).
        #[default]
        None,
        Kubernetes,
        Forward,
        Cache,
        Hosts,
        File,
        Autopath,
        Dns64,
        K8sExternal,
        Template,
        Chaos,
        Local,
        Transfer,
        Secondary,
        Auto,
        /// `tls { acme }`: a DNS-01 challenge's TXT record.
        Tls,
        Etcd,
        Grpc,
    }
}

label_enum! {
    /// The kind of search-path expansion a query was: an outside name with
    /// one of the kubelet's search suffixes appended.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Expansion [EXPANSIONS] {
        /// `<name>.<ns>.svc.<zone>`
        Namespace,
        /// `<name>.svc.<zone>`
        Svc,
        /// `<name>.<zone>`
        Zone,
    }
}

/// Slot for every other rcode (BADVERS, ...).
pub(super) const OTHER: usize = RCODES.len();

/// An rcode as dig and CoreDNS print it: `NOERROR`, `NXDOMAIN`, ...
pub fn rcode_name(rcode: ResponseCode) -> String {
    match u16::from(rcode) {
        n @ 0..=5 => RCODE_NAMES[usize::from(n)].to_string(),
        16 => "BADVERS".into(),
        n => format!("RCODE{n}"),
    }
}

/// The rcode slot of `rcode` (its index in [`RCODE_LABELS`]): [`RCODES`]
/// are codes 0 to 5 in order, so the slot is the code (a compare, not a
/// search: it is counted for every reply). Matched on the variants, not
/// through `u16::from` (a match over every rcode hickory names).
#[inline]
pub fn rcode_slot(rcode: ResponseCode) -> usize {
    match rcode {
        ResponseCode::NoError => 0,
        ResponseCode::FormErr => 1,
        ResponseCode::ServFail => 2,
        ResponseCode::NXDomain => 3,
        ResponseCode::NotImp => 4,
        ResponseCode::Refused => 5,
        ResponseCode::Unknown(n @ 0..=5) => usize::from(n),
        _ => OTHER,
    }
}

/// The names of the rcode slots.
pub const RCODE_LABELS: [&str; 7] = RCODE_NAMES;

/// The `type` label slot of `qtype`.
pub fn type_slot(qtype: RecordType) -> u8 {
    TYPES.iter().position(|t| *t == qtype).unwrap_or(TYPES.len()) as u8
}

/// The `type` label of a slot.
pub(super) fn type_name(slot: usize) -> String {
    TYPES.get(slot).map_or("other".to_string(), ToString::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_rcode_slot_is_its_place_among_the_rcodes() {
        for code in 0..=4095u16 {
            let rcode = <ResponseCode as From<u16>>::from(code);
            let searched = RCODES.iter().position(|r| *r == rcode).unwrap_or(OTHER);
            assert_eq!(rcode_slot(rcode), searched, "rcode {code}");
        }
    }
}
