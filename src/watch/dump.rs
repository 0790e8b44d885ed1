//! Streaming reader of a `kubectl get ... -o yaml|json` dump: each object
//! of a `List`'s `items` is handed over as soon as it is parsed and dropped
//! after, so loading a dump of 100,000 Services never holds the whole tree.
//!
//! ```text
//! document = { "items": [ object... ], other keys ignored }   -- a List
//!          | object                                           -- a single object
//!          | empty                                            -- an empty YAML document
//! ```

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Calls `each` for every object of one document.
pub struct Document<'f, F>(pub &'f mut F);

impl<'de, F: FnMut(Value)> DeserializeSeed<'de> for Document<'_, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(DocumentVisitor(self.0))
    }
}

struct DocumentVisitor<'f, F>(&'f mut F);

impl<'de, F: FnMut(Value)> Visitor<'de> for DocumentVisitor<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object or a List of objects")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut rest = Map::new();
        let mut list = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" {
                map.next_value_seed(Items(&mut *self.0))?;
                list = true;
            } else {
                rest.insert(key, map.next_value::<Value>()?);
            }
        }
        if !list && !rest.is_empty() {
            (self.0)(Value::Object(rest));
        }
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
}

struct Items<'f, F>(&'f mut F);

impl<'de, F: FnMut(Value)> DeserializeSeed<'de> for Items<'_, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(ItemsVisitor(self.0))
    }
}

struct ItemsVisitor<'f, F>(&'f mut F);

impl<'de, F: FnMut(Value)> Visitor<'de> for ItemsVisitor<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<Value>()? {
            (self.0)(item);
        }
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds_json(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut each = |v: Value| out.push(v["kind"].as_str().unwrap_or("?").to_string());
        let mut de = serde_json::Deserializer::from_str(text);
        Document(&mut each).deserialize(&mut de).expect("valid json");
        out
    }

    fn kinds_yaml(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut each = |v: Value| out.push(v["kind"].as_str().unwrap_or("?").to_string());
        for doc in serde_yaml_ng::Deserializer::from_str(text) {
            Document(&mut each).deserialize(doc).expect("valid yaml");
        }
        out
    }

    #[test]
    fn lists_single_objects_and_empty_documents() {
        assert_eq!(
            kinds_json(r#"{"kind":"List","items":[{"kind":"Service"},{"kind":"Pod"}],"metadata":{}}"#),
            ["Service", "Pod"]
        );
        assert_eq!(
            kinds_json(r#"{"kind":"Namespace","metadata":{"name":"a"}}"#),
            ["Namespace"]
        );
        assert_eq!(kinds_json(r#"{"kind":"List","items":[]}"#), Vec::<String>::new());
        let yaml = "kind: List\nitems:\n- kind: Service\n---\n---\nkind: EndpointSlice\n---\nkind: List\nitems: null\n";
        assert_eq!(kinds_yaml(yaml), ["Service", "EndpointSlice"]);
    }
}
