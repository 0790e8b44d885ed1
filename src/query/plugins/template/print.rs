//! How `clusterdns check` prints `template`: every option with its value,
//! defaults written out, so the printout loads again to the same values.

use crate::corefile::words::{names, quote, with, Block};

pub(crate) fn template(b: &mut Block, t: &crate::query::plugins::template::setup::TemplateConfig) {
    let class = t.class.map_or("ANY".to_string(), |c| c.to_string());
    let qtype = t.qtype.map_or("ANY".to_string(), |q| q.to_string());
    let mut options: Vec<String> = t.regex.iter().map(|r| format!("match {}", quote(r.as_str()))).collect();
    options.extend(
        t.vars
            .iter()
            .map(|v| format!("var {} {}", v.name, quote(&v.program.source))),
    );
    options.extend(t.exprs.iter().map(|p| format!("expr {}", quote(&p.source))));
    for (section, list) in [
        ("answer", &t.answer),
        ("additional", &t.additional),
        ("authority", &t.authority),
    ] {
        options.extend(list.iter().map(|x| format!("{section} {}", quote(&x.source))));
    }
    options.push(format!("rcode {}", crate::metrics::rcode_name(t.rcode)));
    if let Some((code, reason)) = &t.ederror {
        options.push(
            format!("ederror {code} {}", quote(reason))
                .trim_end_matches(" \"\"")
                .to_string(),
        );
    }
    options.extend(t.fallthrough.as_ref().map(|z| with("fallthrough", &names(z))));
    b.directive(with(&format!("template {class} {qtype}"), &names(&t.zones)), &options);
}
