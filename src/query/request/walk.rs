//! One walk over a DNS message's records, for every reader of raw
//! messages that needs no decoding: capping a forwarded request's EDNS
//! payload (`edns::cap_payload`), finding a negative reply's SOA serial
//! (the memo), the TTLs and addresses of a cache hit (the hit replay) and
//! a reply's kind for the query log. Each reader keeps its own rule about
//! how the message must end ([`Records::end`]).

/// A record's place in the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rr {
    /// Its index among all records (answer, authority, additional).
    pub index: usize,
    pub section: Section,
    pub rtype: u16,
    pub class: u16,
    /// Offset of its TYPE field (CLASS at +2, TTL at +4, RDLENGTH at +8).
    pub fixed: usize,
    /// Offset of its RDATA, and just past it.
    pub rdata: usize,
    pub end: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Answer,
    Authority,
    Additional,
}

/// The records of a message in order, after its questions. The walk
/// stops at the first record that does not fit in the message.
#[derive(Debug, Clone)]
pub struct Records<'a> {
    msg: &'a [u8],
    at: usize,
    index: usize,
    /// The section counts: answer, authority, additional.
    counts: [usize; 3],
    broken: bool,
}

impl<'a> Records<'a> {
    /// `None`: the header is short or a question cannot be walked.
    pub fn of(msg: &'a [u8]) -> Option<Records<'a>> {
        let count = |i: usize| msg.get(i..i + 2).map(|c| usize::from(u16::from_be_bytes([c[0], c[1]])));
        let (questions, counts) = (count(4)?, [count(6)?, count(8)?, count(10)?]);
        let mut at = 12;
        for _ in 0..questions {
            at = skip_name(msg, at)? + 4;
        }
        Some(Records {
            msg,
            at,
            index: 0,
            counts,
            broken: false,
        })
    }

    /// Where the message's records end: `None` when a record did not fit
    /// (or, before the walk is over, where it has come to).
    pub fn end(&self) -> Option<usize> {
        (!self.broken && self.at <= self.msg.len()).then_some(self.at)
    }

    fn section(&self) -> Option<Section> {
        let [an, ns, ar] = self.counts;
        match self.index {
            i if i < an => Some(Section::Answer),
            i if i < an + ns => Some(Section::Authority),
            i if i < an + ns + ar => Some(Section::Additional),
            _ => None,
        }
    }
}

impl Iterator for Records<'_> {
    type Item = Rr;

    fn next(&mut self) -> Option<Rr> {
        let section = self.section()?;
        if self.broken {
            return None;
        }
        let read = || {
            let fixed = skip_name(self.msg, self.at)?;
            let f = self.msg.get(fixed..fixed + 10)?;
            let rdata = fixed + 10;
            let end = rdata + usize::from(u16::from_be_bytes([f[8], f[9]]));
            let (rtype, class) = (u16::from_be_bytes([f[0], f[1]]), u16::from_be_bytes([f[2], f[3]]));
            Some((rtype, class, fixed, rdata, end))
        };
        let Some((rtype, class, fixed, rdata, end)) = read().filter(|r| r.4 <= self.msg.len()) else {
            self.broken = true;
            return None;
        };
        let rr = Rr {
            index: self.index,
            section,
            rtype,
            class,
            fixed,
            rdata,
            end,
        };
        (self.at, self.index) = (end, self.index + 1);
        Some(rr)
    }
}

/// The offset just past the (possibly compressed) name at `at`.
pub fn skip_name(message: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *message.get(at)?;
        match len {
            0 => return Some(at + 1),
            l if l & 0xC0 == 0xC0 => return Some(at + 2),
            l if l & 0xC0 == 0 => at += usize::from(l) + 1,
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::op::{Message, MessageType, OpCode, Query};
    use hickory_proto::rr::{rdata::A, Name, RData, Record, RecordType};

    fn reply() -> Vec<u8> {
        let name = Name::from_ascii("a.example.").expect("name");
        let mut m = Message::new(1, MessageType::Response, OpCode::Query);
        m.add_query(Query::query(name.clone(), RecordType::A));
        for last in [1, 2] {
            m.add_answer(Record::from_rdata(name.clone(), 30, RData::A(A::new(192, 0, 2, last))));
        }
        m.add_additional(Record::from_rdata(name, 30, RData::A(A::new(192, 0, 2, 3))));
        m.to_vec().expect("encode")
    }

    #[test]
    fn walks_every_record_in_its_section_to_the_end() {
        let msg = reply();
        let mut records = Records::of(&msg).expect("walk");
        let seen: Vec<_> = records
            .by_ref()
            .map(|r| (r.index, r.section, r.rtype, r.end - r.rdata))
            .collect();
        assert_eq!(
            seen,
            [
                (0, Section::Answer, 1, 4),
                (1, Section::Answer, 1, 4),
                (2, Section::Additional, 1, 4)
            ]
        );
        assert_eq!(records.end(), Some(msg.len()));
    }

    #[test]
    fn a_record_past_the_end_stops_the_walk_and_says_so() {
        let msg = reply();
        let short = &msg[..msg.len() - 2];
        let mut records = Records::of(short).expect("walk");
        assert_eq!(records.by_ref().count(), 2);
        assert_eq!(records.end(), None);
        assert!(Records::of(&msg[..11]).is_none(), "a short header");
    }
}
