//! `multisocket [N]`: how many sockets listen on one port, each read by a
//! worker thread of its own (`SO_REUSEPORT`, the kernel spreading clients
//! across them), as CoreDNS's `multisocket`. Without it, one per core; with
//! no N, one per core too; 1 to 1024. Blocks sharing a port share its
//! sockets: the largest N written among them counts. A change by reload
//! opens the port's sockets anew.

use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::problem::ConfigError;
use crate::corefile::words::Block;

/// CoreDNS's limit.
pub const MAX: usize = 1024;

/// Reads one `multisocket` directive: the count, or the core count.
pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> Option<usize> {
    if !Args::from(d).count(0, 1, errors) {
        return None;
    }
    if d.braces {
        // CoreDNS's setup refuses any block after it, an empty one too
        errors.push(ConfigError::new(&d.name.pos, "multisocket: takes no options block"));
        return None;
    }
    let Some(w) = d.args.first() else {
        return Some(std::thread::available_parallelism().map_or(1, |n| n.get()));
    };
    let why = match w.text.parse::<i64>() {
        Err(_) => format!("multisocket: invalid num sockets: '{}'", w.text),
        Ok(n) if n < 1 => format!("multisocket: num sockets can not be zero or negative: {n}"),
        Ok(n) if n > MAX as i64 => format!("multisocket: num sockets exceeds maximum ({MAX}): {n}"),
        Ok(n) => return Some(n as usize),
    };
    errors.push(ConfigError::new(&w.pos, why));
    None
}

/// `check`'s line for a block's `multisocket`.
pub(crate) fn print(b: &mut Block, sockets: Option<usize>) {
    if let Some(n) = sockets {
        b.line(1, format_args!("multisocket {n}"));
    }
}

/// Each block's listener takes the largest `multisocket` among the blocks
/// on its port (they share the port's sockets).
pub fn share(servers: &mut [crate::config::server::Server]) {
    for i in 0..servers.len() {
        let port = servers[i].port;
        let n = servers
            .iter()
            .filter(|s| s.port == port)
            .filter_map(|s| s.multisocket)
            .max();
        servers[i].listen.sockets = n;
    }
}
