//! `minimal` (CoreDNS's minimal responses, as BIND's `minimal-responses`):
//! a successful answer that is not a delegation goes out with its answer
//! section only. Which replies, as CoreDNS's `response.Typify` sorts them:
//! NOERROR with answer records, or NOERROR with no answer records and
//! neither an SOA (NODATA) nor NS records (a delegation) in the authority
//! section, lose their authority and additional records; NODATA,
//! NXDOMAIN, errors and delegations are left whole. The OPT record is not
//! an additional record here: the client's EDNS (and `nsid`) still get
//! their OPT. Applied in [`super::apply`], for answers made here and
//! forwarded ones.

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::RecordType;

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::problem::ConfigError;
use crate::corefile::words::Block;
use crate::query::reply::Answer;

/// Drops `answer`'s authority and additional records when it is a
/// successful answer that is not a delegation.
pub fn minimize(answer: &mut Answer) {
    if answer.rcode != ResponseCode::NoError {
        return;
    }
    let kept = answer.answers.is_empty()
        && (answer.authority.iter()).any(|r| matches!(r.record_type(), RecordType::SOA | RecordType::NS));
    if !kept {
        answer.authority.clear();
        answer.additional.clear();
    }
}

/// `minimal`: no arguments.
pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> bool {
    Args::from(d).count(0, 0, errors)
}

/// How `clusterdns check` prints it.
pub(crate) fn print(b: &mut Block, minimal: bool) {
    if minimal {
        b.line(1, "minimal");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::rr::{Name, RecordType};

    fn answer(rcode: ResponseCode, answers: usize, authority: RecordType) -> Answer {
        let name = Name::from_ascii("example.com.").expect("name");
        let addr = std::net::IpAddr::from([192, 0, 2, 1]);
        let mut a = Answer {
            rcode,
            ..Answer::default()
        };
        for _ in 0..answers {
            a.answers
                .extend(crate::query::reply::address(&name, 5, addr, RecordType::A));
        }
        let zone = crate::query::reply::Zone::new(name.clone());
        a.authority.push(match authority {
            RecordType::SOA => crate::query::reply::soa(&zone, 5, 1),
            _ => crate::query::reply::ns(&name, 5, zone.ns_host.clone()),
        });
        a.additional
            .extend(crate::query::reply::address(&name, 5, addr, RecordType::A));
        a
    }

    /// CoreDNS's response.Typify: only NoError loses its extra sections.
    #[test]
    fn only_successful_non_delegations_are_minimized() {
        let cases = [
            (ResponseCode::NoError, 1, RecordType::NS, true),    // NoError
            (ResponseCode::NoError, 1, RecordType::SOA, true),   // NoError (answers win)
            (ResponseCode::NoError, 0, RecordType::NS, false),   // Delegation
            (ResponseCode::NoError, 0, RecordType::SOA, false),  // NoData
            (ResponseCode::NXDomain, 0, RecordType::SOA, false), // NameError
            (ResponseCode::NXDomain, 1, RecordType::SOA, false), // OtherError
            (ResponseCode::ServFail, 1, RecordType::NS, false),  // ServerError
            (ResponseCode::Refused, 0, RecordType::NS, false),   // OtherError
        ];
        for (rcode, answers, authority, minimized) in cases {
            let mut a = answer(rcode, answers, authority);
            minimize(&mut a);
            let gone = a.authority.is_empty() && a.additional.is_empty();
            assert_eq!(gone, minimized, "{rcode:?} {answers} {authority:?}");
            assert_eq!(a.answers.len(), answers);
        }
        // NOERROR with nothing in authority (a reply only in additional): NoError, minimized
        let mut a = answer(ResponseCode::NoError, 0, RecordType::NS);
        a.authority.clear();
        minimize(&mut a);
        assert!(a.additional.is_empty());
    }
}
