//! How `clusterdns check` prints `dnstap`: every option with its value,
//! defaults written out, so the printout loads again to the same values.

use crate::corefile::words::{quote, Block};
use crate::dnstap::setup::{DnstapConfig, Endpoint};

/// `dnstap [listen] SOCKET [full] WRITEBUFFER QUEUE { identity; version; extra; tls; skipverify }`.
pub(crate) fn dnstap(b: &mut Block, d: &DnstapConfig) {
    let socket = match &d.endpoint {
        Endpoint::Unix(path) => format!("unix://{}", path.display()),
        Endpoint::Tcp(addr) => format!("tcp://{addr}"),
        Endpoint::Tls(addr) => format!("tls://{addr}"),
    };
    let listen = if d.listen.is_some() { "listen " } else { "" };
    let mut head = format!("dnstap {listen}{}", quote(&socket));
    if d.full {
        head.push_str(" full");
    }
    let mut options = vec![
        format!("identity {}", quote(&d.identity)),
        format!("version {}", quote(&d.version)),
    ];
    options.extend(d.extra.as_ref().map(|e| format!("extra {}", quote(e))));
    if let Some(tls) = d.listen.as_ref().and_then(|l| l.tls.as_ref()) {
        let mut files = vec![tls.cert.display().to_string(), tls.key.display().to_string()];
        files.extend(tls.ca.as_ref().map(|ca| ca.display().to_string()));
        options.push(format!(
            "tls {}",
            files.iter().map(|f| quote(f)).collect::<Vec<_>>().join(" ")
        ));
    }
    options.extend(d.skip_verify.then(|| "skipverify".to_string()));
    // WRITEBUFFER and QUEUE follow `full`, so they are written only with it.
    if d.full {
        head.push_str(&format!(" {} {}", d.write_buffer, d.queue));
    }
    b.directive(head, &options);
}
