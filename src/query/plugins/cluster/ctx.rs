//! The cluster zone's lookup state: the plugin's options and store
//! ([`Cluster`]) and one lookup's context ([`Ctx`]).

use std::sync::Arc;

use hickory_proto::rr::{Name, RecordType};

use crate::kubernetes::KubernetesConfig;
use crate::query::reply::{Answer, Zone};
use crate::store::{Snapshot, Store};

/// How deep an ExternalName chain inside the zone is followed.
pub(crate) const MAX_CHASE: u8 = 8;

/// The `kubernetes` plugin's query side: its options, zones and store.
pub struct Cluster {
    pub cfg: Arc<KubernetesConfig>,
    pub store: Arc<Store>,
    pub zones: Vec<Zone>,
    /// Whether its common answers may be written straight from the
    /// snapshot ([`direct`]); tests turn it off to compare the two paths.
    pub direct: bool,
}

/// One lookup: the snapshot, the options, the zone matched, the name whose
/// records are being collected (the query name, or a CNAME target) and the
/// reply being built.
pub struct Ctx<'s, 'o> {
    pub snap: &'s Snapshot,
    pub cfg: &'s KubernetesConfig,
    pub zone: &'s Zone,
    /// Every zone of the plugin (PTR targets use the first forward zone).
    pub zones: &'s [Zone],
    pub owner: Name,
    pub qtype: RecordType,
    pub out: &'o mut Answer,
    /// A CNAME's target outside the zone, for the router to chase.
    pub chase: Option<Name>,
}

/// `zone` as `qname` spells it, when that is not as configured: the names
/// a reply builds in the zone (SOA, NS host, SRV targets and their glue)
/// follow the question's case, as CoreDNS writes them
/// (`handler_case_test.go`). `None` when spelt as configured.
pub(crate) fn spelled(qname: &Name, zone: &Zone) -> Option<Zone> {
    let labels = zone.name.num_labels();
    let skip = qname.num_labels().checked_sub(labels)?;
    if qname.iter().skip(usize::from(skip)).eq(zone.name.iter()) {
        return None;
    }
    Some(Zone::new(qname.trim_to(usize::from(labels))))
}
