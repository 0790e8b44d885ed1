//! How `clusterdns check` prints `tsig`: zones, each key by its name only
//! (an inline secret is shown as `[hidden]`; a `secrets` file by its
//! path), and what is required, defaults written out.

use hickory_proto::rr::RecordType;

use super::setup::{Require, TsigConfig, OPCODES};
use crate::corefile::words::{names, with, Block};

pub(crate) fn tsig(b: &mut Block, t: &TsigConfig) {
    let from_files = |n: &hickory_proto::rr::Name| t.files.iter().any(|(_, keys)| keys.contains(n));
    let mut options: Vec<String> = (t.keys.iter())
        .filter(|k| !from_files(&k.name))
        .map(|k| format!("secret {} [hidden]", k.name))
        .collect();
    options.extend(t.files.iter().map(|(file, _)| format!("secrets {file}")));
    let types = required(&t.require, |q| match q {
        251 => "IXFR".into(),
        252 => "AXFR".into(),
        q => RecordType::from(q).to_string(),
    });
    options.push(format!("require {types}"));
    let opcodes = required(&t.require_opcode, |o| {
        let name = OPCODES.iter().find(|(_, n)| *n == o).map_or("?", |(name, _)| name);
        name.to_string()
    });
    options.push(format!("require_opcode {opcodes}"));
    b.directive(with("tsig", &names(&t.zones)), &options);
}

fn required<T: Copy>(r: &Require<T>, name: impl Fn(T) -> String) -> String {
    match (r.all, r.listed.is_empty()) {
        (true, _) => "all".into(),
        (false, true) => "none".into(),
        _ => r.listed.iter().map(|v| name(*v)).collect::<Vec<_>>().join(" "),
    }
}
