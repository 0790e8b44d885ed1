//! Label and field selectors, as the API server evaluates them.
//!
//! ```text
//! labels = req { "," req }   req = K ("="|"=="|"!=") V | K ("in"|"notin") "(" V {"," V} ")" | K | "!" K
//! fields = req { "," req }   req = PATH ("="|"=="|"!=") V       PATH = dotted JSON path (metadata.name)
//! ```

use serde_json::Value;

/// Whether `object` matches both selectors (empty selectors match all).
pub fn matches(object: &Value, labels: &str, fields: &str) -> bool {
    let obj_labels = &object["metadata"]["labels"];
    split(labels).all(|req| label_matches(obj_labels, req)) && split(fields).all(|req| field_matches(object, req))
}

fn split(selector: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0;
    selector
        .split(move |c| {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            c == ',' && depth == 0
        })
        .map(str::trim)
        .filter(|r| !r.is_empty())
}

fn label_matches(labels: &Value, req: &str) -> bool {
    let get = |k: &str| labels.get(k.trim()).and_then(Value::as_str);
    if let Some(k) = req.strip_prefix('!') {
        return get(k).is_none();
    }
    if let Some((k, v)) = req.split_once("!=") {
        return get(k) != Some(v.trim());
    }
    if let Some((k, v)) = req.split_once('=') {
        return get(k) == Some(v.trim_start_matches('=').trim());
    }
    for (op, negate) in [(" notin ", true), (" in ", false)] {
        if let Some((k, list)) = req.split_once(op) {
            let values: Vec<&str> = list
                .trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .split(',')
                .map(str::trim)
                .collect();
            let found = get(k).is_some_and(|v| values.contains(&v));
            return found != negate;
        }
    }
    get(req).is_some()
}

fn field_matches(object: &Value, req: &str) -> bool {
    let (path, value, negate) = match req.split_once("!=") {
        Some((p, v)) => (p, v, true),
        None => match req.split_once('=') {
            Some((p, v)) => (p, v.trim_start_matches('='), false),
            None => return true,
        },
    };
    let mut at = object;
    for part in path.trim().split('.') {
        at = &at[part];
    }
    let actual = at.as_str().unwrap_or("");
    (actual == value.trim()) != negate
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors() {
        let o = json!({"metadata": {"name": "a", "namespace": "x", "labels": {"app": "web", "tier": "1"}}, "status": {"phase": "Running"}});
        assert!(matches(&o, "", ""));
        assert!(matches(
            &o,
            "app=web,tier in (1,2)",
            "metadata.namespace=x,status.phase!=Failed"
        ));
        assert!(!matches(&o, "app!=web", ""));
        assert!(!matches(&o, "!app", ""));
        assert!(matches(&o, "tier notin (3)", ""));
        assert!(!matches(&o, "", "status.phase!=Running"));
        assert!(!matches(&o, "missing", ""));
    }
}
