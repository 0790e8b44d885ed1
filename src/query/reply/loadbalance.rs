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

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{RData, Record, RecordType};

use super::answer::Answer;
use crate::corefile::args::Net;
use crate::query::reply::loadbalance::setup::LoadbalanceConfig;
use crate::query::reply::loadbalance::weights::Weights;

impl Answer {
    /// `loadbalance` on a NOERROR answer, as CoreDNS orders it: in each
    /// section, a run of addresses of one type is shuffled; a mixed one
    /// becomes CNAMEs, the other records, the addresses shuffled, the MX
    /// records shuffled. Then, with `prefer`, the answer and additional
    /// sections become CNAMEs, the addresses in the preferred networks (in
    /// the order they are listed) then the others, MX, the rest. Returns
    /// whether an order was drawn (the reply is then not memoized). With
    /// `weighted`, [`order`] orders instead.
    pub fn balance(&mut self, lb: &LoadbalanceConfig) -> bool {
        if self.rcode != ResponseCode::NoError {
            return false;
        }
        if let Some(w) = &lb.weighted {
            order(&mut self.answers, w);
            order(&mut self.additional, w);
            return true;
        }
        let drawn = [&self.answers, &self.authority, &self.additional]
            .iter()
            .any(|s| s.len() > 1);
        for section in [&mut self.answers, &mut self.authority, &mut self.additional] {
            round_robin(section);
        }
        if !lb.prefer.is_empty() {
            prefer(&mut self.answers, &lb.prefer);
            prefer(&mut self.additional, &lb.prefer);
        }
        drawn
    }
}

fn is_address(r: &Record) -> bool {
    matches!(r.record_type(), RecordType::A | RecordType::AAAA)
}

/// `records` taken apart as `[CNAME, other, A and AAAA, MX]`, each in order.
pub(crate) fn partition(records: &mut Vec<Record>) -> [Vec<Record>; 4] {
    let mut parts: [Vec<Record>; 4] = Default::default();
    for r in records.drain(..) {
        let slot = match r.record_type() {
            RecordType::CNAME => 0,
            RecordType::A | RecordType::AAAA => 2,
            RecordType::MX => 3,
            _ => 1,
        };
        parts[slot].push(r);
    }
    parts
}

/// CoreDNS's round robin of one section (see [`Answer::balance`]).
fn round_robin(records: &mut Vec<Record>) {
    if records.len() < 2 {
        return;
    }
    let first = records[0].record_type();
    if is_address(&records[0]) && records.iter().all(|r| r.record_type() == first) {
        shuffle(records.len(), |k, j| records.swap(k, j));
        return;
    }
    let [cname, rest, mut addrs, mut mx] = partition(records);
    shuffle(addrs.len(), |k, j| addrs.swap(k, j));
    shuffle(mx.len(), |k, j| mx.swap(k, j));
    records.extend(cname.into_iter().chain(rest).chain(addrs).chain(mx));
}

fn address_of(r: &Record) -> Option<IpAddr> {
    match &r.data {
        RData::A(a) => Some(IpAddr::V4(a.0)),
        RData::AAAA(a) => Some(IpAddr::V6(a.0)),
        _ => None,
    }
}

/// `loadbalance { prefer }`'s order of one section (see [`Answer::balance`]).
fn prefer(records: &mut Vec<Record>, nets: &[Net]) {
    let [cname, rest, mut addrs, mx] = partition(records);
    let rank = |r: &Record| {
        let ip = address_of(r);
        nets.iter()
            .position(|n| ip.is_some_and(|ip| n.contains(ip)))
            .unwrap_or(nets.len())
    };
    addrs.sort_by_key(rank); // stable: the shuffled order within a rank stays
    records.extend(cname.into_iter().chain(addrs).chain(mx).chain(rest));
}

/// `loadbalance`'s draws, one place for every form it shuffles (records,
/// addresses written straight from the snapshot, a cache hit's bytes): a
/// Fisher-Yates shuffle of `len` items, each step a `swap(k, j)`, `j <= k`.
pub fn shuffle(len: usize, mut swap: impl FnMut(usize, usize)) {
    for k in (1..len).rev() {
        swap(k, fastrand::usize(..=k));
    }
}

/// Orders one section (see the module).
pub fn order(records: &mut Vec<Record>, weights: &Weights) {
    if !records.iter().any(|r| address_of(r).is_some()) {
        return;
    }
    let [cname, rest, mut addrs, mx] = partition(records);
    if let Some(top) = draw(&addrs, weights, |limit| fastrand::u32(..limit)) {
        addrs.swap(0, top);
    }
    records.extend(cname.into_iter().chain(rest).chain(addrs).chain(mx));
}

/// The index in `addrs` of the address drawn: heaviest first, `random(sum)`
/// (a number below the sum of the weights) falls into one's share.
pub fn draw(addrs: &[Record], weights: &Weights, random: impl FnOnce(u32) -> u32) -> Option<usize> {
    let mut weighed: Vec<(usize, u32)> = addrs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let ip = address_of(r)?;
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
