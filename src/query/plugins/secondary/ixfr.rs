//! Incremental transfer in (RFC 1995) over TCP: the secondary names the
//! serial it holds and the primary answers with one of three shapes,
//! told apart by the records' order:
//!
//! ```text
//!  SOA(new) and nothing else ............... the primary is not newer: keep
//!  SOA(new) SOA(held) -del- SOA(s1) +add+
//!           SOA(s1) -del- SOA(s2) +add+ ...
//!           SOA(new) ......................... incremental: applied in turn
//!  SOA(new) A NS ... SOA(new) ................ AXFR-style: the whole zone
//! ```
//!
//! A deletion of a record the zone does not hold, a diff that does not
//! start at the serial reached, or anything else out of order is an
//! error: the caller then transfers the whole zone by AXFR, so a primary
//! that answers IXFR wrongly costs a transfer, never a wrong zone.

use std::net::SocketAddr;

use hickory_proto::rr::{RData, Record, RecordType};

use super::xfr::{ask, read};
use crate::zonefile::{newer, Zone};

/// What an IXFR brought: the zone and how many diffs (0: the primary sent
/// the zone whole), or `None`: nothing newer than `held`.
pub type Got = Option<(Zone, usize)>;

/// `held`'s zone by IXFR from `primary`.
pub async fn ixfr(primary: SocketAddr, held: &Zone) -> Result<Got, String> {
    let (mut conn, id) = ask(primary, held.origin(), RecordType::IXFR, Some(held.soa().clone())).await?;
    let mut reader = Reader::new(held);
    loop {
        let reply = read(&mut conn, id).await?;
        if reply.answers.is_empty() {
            return Err(format!("{primary} sent a message with no records"));
        }
        let mut answers = reply.answers.into_iter();
        for r in answers.by_ref() {
            if reader.push(r)? {
                break;
            }
        }
        if reader.done() {
            if answers.next().is_some() {
                return Err(format!("{primary} sent records after the closing SOA"));
            }
            return reader.finish(held);
        }
    }
}

/// Where the reading stands.
#[derive(Debug, PartialEq)]
enum Step {
    /// Before the first SOA.
    Start,
    /// After it: the second record tells the shape.
    Shape,
    /// An AXFR-style answer, until the SOA comes again.
    Whole,
    /// Inside a diff: its deletions, then (after its new SOA) its additions.
    Deleting,
    Adding,
    Done,
}

/// Reads an IXFR answer's records in order, applying diffs as they come.
struct Reader {
    step: Step,
    /// The serial the primary has (its first SOA).
    newest: Option<Record>,
    /// The serial the records below are at.
    at: u32,
    /// The zone's records but its SOA.
    records: Vec<Record>,
    diffs: usize,
    current: bool,
}

fn serial(r: &Record) -> Option<u32> {
    match &r.data {
        RData::SOA(soa) => Some(soa.serial),
        _ => None,
    }
}

/// The same record, TTL aside: name (any case), class, type and data.
fn same(a: &Record, b: &Record) -> bool {
    a.name == b.name && a.dns_class == b.dns_class && a.record_type() == b.record_type() && a.data == b.data
}

impl Reader {
    fn new(held: &Zone) -> Reader {
        Reader {
            step: Step::Start,
            newest: None,
            at: held.serial(),
            records: held.records().skip(1).cloned().collect(),
            diffs: 0,
            current: false,
        }
    }

    fn done(&self) -> bool {
        self.step == Step::Done
    }

    /// Takes the next record; true once the answer is complete.
    fn push(&mut self, r: Record) -> Result<bool, String> {
        let soa = serial(&r);
        let newest = self.newest.as_ref().and_then(serial);
        self.step = match (&self.step, soa) {
            (Step::Start, Some(s)) if !newer(s, self.at) => {
                self.current = true;
                Step::Done
            }
            (Step::Start, Some(_)) => {
                self.newest = Some(r);
                Step::Shape
            }
            (Step::Start, None) => return Err("the IXFR answer does not start with an SOA".into()),
            (Step::Shape, Some(s)) if s == self.at => Step::Deleting,
            (Step::Shape, Some(s)) if Some(s) == newest => {
                self.records.clear();
                Step::Done
            }
            (Step::Whole, Some(s)) if Some(s) == newest => Step::Done,
            (Step::Shape, None) => {
                self.records.clear();
                self.records.push(r);
                Step::Whole
            }
            (Step::Whole, None) => {
                self.records.push(r);
                Step::Whole
            }
            (Step::Deleting, Some(s)) => {
                self.at = s;
                self.diffs += 1;
                Step::Adding
            }
            (Step::Deleting, None) => {
                let i = self.records.iter().position(|h| same(h, &r));
                let i = i.ok_or_else(|| {
                    format!(
                        "the IXFR deletes {} {}, which the zone does not hold",
                        r.name,
                        r.record_type()
                    )
                })?;
                self.records.swap_remove(i);
                Step::Deleting
            }
            (Step::Adding, Some(s)) if Some(s) == newest && self.at == s => Step::Done,
            (Step::Adding, Some(s)) if s == self.at => Step::Deleting,
            (Step::Adding, None) => {
                if !self.records.iter().any(|h| same(h, &r)) {
                    self.records.push(r);
                }
                Step::Adding
            }
            (step, _) => return Err(format!("the IXFR answer has an SOA out of order ({step:?})")),
        };
        Ok(self.done())
    }

    /// The zone the answer leaves (whole or with its diffs applied).
    fn finish(self, held: &Zone) -> Result<Got, String> {
        if self.current {
            return Ok(None);
        }
        let soa = self.newest.ok_or("the IXFR answer ended early")?;
        let records = std::iter::once(soa).chain(self.records).collect();
        let zone = crate::zonefile::from_records(held.origin(), records)?;
        Ok(Some((zone, self.diffs)))
    }
}

#[cfg(test)]
mod tests;
