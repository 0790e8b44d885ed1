//! What a handler produces: an rcode, flags and three sections of records.

use std::net::IpAddr;

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Record, RecordType};

use super::tags::Tags;

/// A handler's reply, reused across queries by each worker: the message
/// being built (rcode, flags, three sections, the extended DNS error) and,
/// apart, its [`Tags`], which never reach the wire.
#[derive(Debug, Default)]
pub struct Answer {
    pub rcode: ResponseCode,
    pub authoritative: bool,
    /// Flags relayed from an upstream answer.
    pub recursion_available: bool,
    pub authentic_data: bool,
    /// The upstream answer was truncated: the client must see TC.
    pub truncated: bool,
    pub answers: Vec<Record>,
    pub authority: Vec<Record>,
    pub additional: Vec<Record>,
    /// RFC 8914 extended DNS error (code, text) for the OPT record.
    pub ede: Option<(u16, String)>,
    pub tags: Tags,
    /// Scratch space of the cluster zone's direct writer: the addresses
    /// it writes (no records are built for them).
    pub addrs: Vec<IpAddr>,
}

impl Answer {
    /// Empties the answer for the next query, keeping its allocations.
    pub fn clear(&mut self) {
        self.rcode = ResponseCode::NoError;
        self.authoritative = false;
        self.recursion_available = false;
        self.authentic_data = false;
        self.truncated = false;
        self.ede = None;
        self.tags = Tags {
            deps: crate::store::Deps::EVERYTHING,
            ..Tags::default()
        };
        self.answers.clear();
        self.authority.clear();
        self.additional.clear();
        self.addrs.clear();
    }

    /// An error reply with no records.
    pub fn error(&mut self, rcode: ResponseCode) {
        let plugin = self.tags.plugin;
        self.restart();
        (self.rcode, self.tags.plugin) = (rcode, plugin);
    }

    /// Empties the answer but for what entering the block set (`zone`,
    /// `bufsize`, `log`, `nsid`): the whole way after the short way declined.
    pub fn restart(&mut self) {
        let (log, zone, bufsize) = (self.tags.log, self.tags.zone, self.tags.bufsize);
        let nsid = self.tags.nsid.take();
        self.clear();
        (self.tags.log, self.tags.zone, self.tags.bufsize, self.tags.nsid) = (log, zone, bufsize, nsid);
    }

    /// Every record of the three sections.
    pub fn records(&self) -> impl Iterator<Item = &Record> {
        self.answers.iter().chain(&self.authority).chain(&self.additional)
    }

    /// Sets the TTL of every record of the three sections.
    pub fn set_ttls(&mut self, ttl: u32) {
        for r in self
            .answers
            .iter_mut()
            .chain(&mut self.authority)
            .chain(&mut self.additional)
        {
            r.ttl = ttl;
        }
    }

    /// Drops what a plugin that passed the query on may have left.
    pub fn clear_records(&mut self) {
        self.error(ResponseCode::NoError);
    }

    /// Takes an upstream's (or the cache's) reply: its rcode, flags and
    /// records, less its OPT record (ours is written by `finish`).
    pub fn relay(&mut self, msg: &hickory_proto::op::Message) {
        self.rcode = msg.metadata.response_code;
        self.recursion_available = msg.metadata.recursion_available;
        self.authentic_data = msg.metadata.authentic_data;
        self.truncated = msg.metadata.truncation;
        self.answers.extend(msg.answers.iter().cloned());
        self.authority.extend(msg.authorities.iter().cloned());
        self.additional.extend(
            msg.additionals
                .iter()
                .filter(|r| r.record_type() != RecordType::OPT)
                .cloned(),
        );
    }
}
