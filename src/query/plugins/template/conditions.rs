//! A matching template's `var`s and `expr`s, run per query in order (as
//! CoreDNS: each `var` sees those before it; all `expr`s must be true; a
//! run that fails answers SERVFAIL whatever `fallthrough` says, a false or
//! non-boolean condition is no match).

use std::net::IpAddr;

use hickory_proto::op::Query;

use crate::corefile::expr::{self, Value};
use crate::corefile::gotmpl::{self, Data};
use crate::query::plugins::template::setup::TemplateConfig;

/// What the conditions made of a template's regex match.
#[derive(Debug, PartialEq)]
pub enum Judged {
    Match,
    /// A condition is false: as if no regex had matched.
    NoMatch,
    /// A `var` or `expr` failed to run.
    Failed,
}

/// Whether template `t`'s answer depends on the client through its expressions.
pub fn uses_client(t: &TemplateConfig) -> bool {
    t.vars.iter().any(|v| v.program.uses_client) || t.exprs.iter().any(|p| p.uses_client)
}

/// Runs `t`'s variables (into `data.vars`) and conditions for `query` from
/// `client`, sent as `wire` says.
pub fn judge(t: &TemplateConfig, query: &Query, (client, wire): (IpAddr, expr::Wire), data: &mut Data<'_>) -> Judged {
    if t.vars.is_empty() && t.exprs.is_empty() {
        return Judged::Match;
    }
    let (qtype, class) = (query.query_type().to_string(), query.query_class().to_string());
    let env = expr::Query {
        name: data.name,
        qtype: &qtype,
        class: &class,
        client: Some(client),
        groups: &data.groups,
        wire,
        metadata: data.meta,
    };
    let mut values = Vec::with_capacity(t.vars.len());
    for var in &t.vars {
        match var.program.run(&env, &values) {
            Ok(v) => values.push(v),
            Err(e) => {
                tracing::debug!(target: "template", "var {} = {:?} for {}: {e}", var.name, var.program.source, data.name);
                return Judged::Failed;
            }
        }
    }
    for program in &t.exprs {
        match program.run(&env, &values) {
            Ok(Value::Bool(true)) => {}
            Ok(_) => return Judged::NoMatch,
            Err(e) => {
                tracing::debug!(target: "template", "expr {:?} for {}: {e}", program.source, data.name);
                return Judged::Failed;
            }
        }
    }
    data.vars = t
        .vars
        .iter()
        .zip(values)
        .map(|(v, x)| (v.name.clone(), shown(x)))
        .collect();
    Judged::Match
}

/// An expression's value as a template sees it.
fn shown(v: Value) -> gotmpl::Value {
    match v {
        Value::Int(n) => gotmpl::Value::Int(n),
        Value::Bool(b) => gotmpl::Value::Bool(b),
        Value::Str(s) => gotmpl::Value::Str(s),
        Value::Array(items) => gotmpl::Value::List(items.into_iter().map(shown).collect()),
        Value::Float(x) => gotmpl::Value::Str(x.to_string()),
        Value::Nil => gotmpl::Value::Missing,
    }
}
