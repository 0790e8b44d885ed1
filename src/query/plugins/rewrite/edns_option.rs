//! The EDNS0 option a `rewrite edns0` rule sets in the request that goes
//! upstream: NSID, the client's subnet, or a local option's data (constant
//! or one of the request's fields: `{qname}`, `{client_ip}`, `{server_ip}`...).

use std::net::{IpAddr, SocketAddr};

use hickory_proto::op::Query;
use hickory_proto::rr::rdata::opt::{ClientSubnet, EdnsCode, EdnsOption, NSIDPayload};
use hickory_proto::rr::Name;

use crate::metrics::Transport;
use crate::query::metadata::Metadata;
use crate::query::plugins::rewrite::setup::rule::{EdnsData, EdnsRule};

/// The option `rule` sets for `query` from `peer` (that came in on
/// `local`; `metadata`: the block's, with the name the client asked and
/// its request's ECS address); `None`: nothing to set (an address not
/// known, a metadata label unset or empty).
pub(super) fn option_for(
    rule: &EdnsRule,
    query: &Query,
    (peer, local): (SocketAddr, Option<SocketAddr>),
    t: Transport,
    metadata: Option<(&Metadata, &Name, Option<IpAddr>)>,
) -> Option<(EdnsCode, EdnsOption)> {
    Some(match rule {
        EdnsRule::Nsid => (EdnsCode::NSID, EdnsOption::NSID(NSIDPayload::new(Vec::new()).ok()?)),
        EdnsRule::Subnet { v4, v6 } => {
            let (ip, len) = match peer.ip() {
                IpAddr::V4(a) => {
                    let mask = u32::MAX.checked_shl(32 - u32::from(*v4)).unwrap_or(0);
                    (IpAddr::from(std::net::Ipv4Addr::from_bits(a.to_bits() & mask)), *v4)
                }
                IpAddr::V6(a) => {
                    let mask = u128::MAX.checked_shl(128 - u32::from(*v6)).unwrap_or(0);
                    (IpAddr::from(std::net::Ipv6Addr::from_bits(a.to_bits() & mask)), *v6)
                }
            };
            (EdnsCode::Subnet, EdnsOption::Subnet(ClientSubnet::new(ip, len, 0)))
        }
        EdnsRule::Local { code, data } => {
            let bytes = match data {
                EdnsData::Bytes(b) => b.clone(),
                EdnsData::Qname => query.name().to_ascii().into_bytes(),
                EdnsData::Qtype => u16::from(query.query_type()).to_be_bytes().to_vec(),
                EdnsData::ClientIp => ip_bytes(peer.ip()),
                EdnsData::ServerIp => ip_bytes(local?.ip()),
                EdnsData::ServerPort => local?.port().to_be_bytes().to_vec(),
                EdnsData::ClientPort => peer.port().to_be_bytes().to_vec(),
                EdnsData::Protocol => t.label().as_bytes().to_vec(),
                EdnsData::Metadata(label) => {
                    let (m, asked, subnet) = metadata.filter(|(m, asked, _)| m.covers(asked))?;
                    let value = m.value(label, asked, peer.ip(), subnet)?;
                    Some(value.into_bytes()).filter(|v| !v.is_empty())?
                }
            };
            (EdnsCode::from(*code), EdnsOption::Unknown(*code, bytes))
        }
    })
}

/// An address as CoreDNS's edns0 rule writes it: 4 bytes for IPv4 (an
/// IPv4-mapped IPv6 address too), else 16.
fn ip_bytes(ip: IpAddr) -> Vec<u8> {
    match ip.to_canonical() {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}
