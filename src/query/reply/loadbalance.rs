//! `loadbalance weighted`: in the answer and additional sections of an A,
//! AAAA or SRV answer, one address is drawn with a chance proportional to
//! its weight (1 when the weight file does not list it) and put first;
//! the section becomes CNAMEs, the other records, the addresses, MX, as
//! CoreDNS orders it. Nothing else is shuffled; a section without an
//! address stays as it is.

pub mod print;
pub mod setup;
pub mod weights;

use std::net::IpAddr;

use hickory_proto::rr::{RData, Record};

use super::partition;
use crate::query::reply::loadbalance::weights::Weights;

/// Orders one section (see the module).
pub fn order(records: &mut Vec<Record>, weights: &Weights) {
    if !records.iter().any(|r| address(r).is_some()) {
        return;
    }
    let [cname, rest, mut addrs, mx] = partition(records);
    if let Some(top) = draw(&addrs, weights, |limit| fastrand::u32(..limit)) {
        addrs.swap(0, top);
    }
    records.extend(cname.into_iter().chain(rest).chain(addrs).chain(mx));
}

fn address(r: &Record) -> Option<IpAddr> {
    match &r.data {
        RData::A(a) => Some(IpAddr::V4(a.0)),
        RData::AAAA(a) => Some(IpAddr::V6(a.0)),
        _ => None,
    }
}

/// The index in `addrs` of the address drawn: heaviest first, `random(sum)`
/// (a number below the sum of the weights) falls into one's share.
pub fn draw(addrs: &[Record], weights: &Weights, random: impl FnOnce(u32) -> u32) -> Option<usize> {
    let mut weighed: Vec<(usize, u32)> = addrs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let ip = address(r)?;
            Some((i, u32::from(weights.weight(&r.name.to_lowercase().to_ascii(), ip))))
        })
        .collect();
    let sum: u32 = weighed.iter().map(|(_, w)| w).sum();
    if sum == 0 {
        return None;
    }
    weighed.sort_by_key(|w| std::cmp::Reverse(w.1));
    let v = random(sum);
    let mut upto = 0;
    weighed.into_iter().find_map(|(i, w)| {
        upto += w;
        (v < upto).then_some(i)
    })
}

#[cfg(test)]
mod tests;
