//! `geoip DBFILE [{ edns-subnet }]`: one database per server block,
//! opened when the Corefile loads (a file that cannot be opened, or whose
//! database type has no schema CoreDNS reads, is an error naming it).
//! DBFILE resolves in the block's `root`, else beside the Corefile.

use std::any::Any;
use std::path::Path;
use std::sync::Arc;

use super::db::Geoip;
use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt};
use crate::corefile::problem::ConfigError;
use crate::corefile::words::Block;
use crate::query::plugins::chain::Setup;

/// A block's `geoip`, as the configuration holds it: the open database.
#[derive(Debug)]
pub struct GeoipSetup {
    pub db: Arc<Geoip>,
    /// DBFILE as written (what `check` prints).
    written: String,
}

/// The options of the block: `edns-subnet` alone.
const OPTIONS: &[Opt<bool>] = &[Opt::new("edns-subnet", (0, 0), |_, on, _| *on = true)];

/// Reads `geoip` (`earlier`: the block has one already) with relative
/// paths resolved in `dir`; `None` when it cannot serve.
pub fn parse(d: &Directive, earlier: bool, dir: &Path, errors: &mut Vec<ConfigError>) -> Option<Arc<dyn Setup>> {
    if earlier {
        let message = "geoip: configuring multiple databases is not supported";
        errors.push(ConfigError::new(&d.name.pos, message));
        return None;
    }
    let mut edns_subnet = false;
    options::read("geoip", &d.options, OPTIONS, &mut edns_subnet, errors);
    if !Args::from(d).count(1, 1, errors) {
        return None;
    }
    let written = d.args[0].text.clone();
    match Geoip::open(&dir.join(&written), edns_subnet) {
        Ok(db) => Some(Arc::new(GeoipSetup {
            db: Arc::new(db),
            written,
        })),
        Err(e) => {
            errors.push(ConfigError::new(&d.args[0].pos, format!("geoip: {e}")));
            None
        }
    }
}

/// The database of a block's `geoip` setup, if it has one, as the
/// block's `metadata` asks it.
pub fn of(setup: Option<&Arc<dyn Setup>>) -> Option<Arc<dyn crate::query::metadata::Provider>> {
    let setup = setup.and_then(|s| (&**s as &dyn Any).downcast_ref::<GeoipSetup>())?;
    Some(setup.db.clone())
}

impl Setup for GeoipSetup {
    fn name(&self) -> &'static str {
        "geoip"
    }

    fn print(&self, b: &mut Block) {
        let options = if self.db.edns_subnet {
            vec!["edns-subnet".to_string()]
        } else {
            Vec::new()
        };
        let schemas = [(self.db.schemas.city, "city"), (self.db.schemas.asn, "asn")];
        let kinds: Vec<&str> = schemas.iter().filter(|s| s.0).map(|s| s.1).collect();
        b.line(
            1,
            format_args!("# geoip: {} provides {}", self.db.path.display(), kinds.join(", ")),
        );
        b.directive(format!("geoip {}", self.written), &options);
    }
}
