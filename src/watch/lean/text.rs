//! [`Str`]: a string of an API object borrowed from the text it is read
//! from, copied only when it cannot be (an escape in the JSON string, a
//! YAML or `serde_json::Value` source that owns its strings).
//!
//! serde's own `Cow<str>` always copies inside an `Option`, a `Vec` or a
//! map; this one borrows wherever the deserializer offers a borrowed string.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;

use serde::de::{Deserialize, Deserializer, Error, Visitor};

/// A string of a decoded object (derefs to `str`).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Str<'a>(pub Cow<'a, str>);

impl Str<'_> {
    /// An owned copy (for what outlives the text: keys, versions, errors).
    pub fn owned(&self) -> String {
        self.0.as_ref().to_string()
    }

    /// The same string, holding its own copy.
    pub fn into_owned(self) -> Str<'static> {
        Str(Cow::Owned(self.0.into_owned()))
    }

    /// A copy of `s` that outlives it.
    pub fn copied(s: &str) -> Str<'static> {
        Str(Cow::Owned(s.to_string()))
    }
}

impl Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Str<'_> {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Str<'_> {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'a> From<&'a str> for Str<'a> {
    fn from(s: &'a str) -> Self {
        Str(Cow::Borrowed(s))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: Error>(self, s: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(s)))
            }
            fn visit_str<E: Error>(self, s: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(s.to_string())))
            }
            fn visit_string<E: Error>(self, s: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(s)))
            }
        }
        d.deserialize_str(Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrowed_from_json_text_unless_escaped_or_owned_by_the_source() {
        let text = r#"["plain", "esc\"aped"]"#;
        let v: Vec<Str> = serde_json::from_str(text).expect("json");
        assert!(matches!(v[0].0, Cow::Borrowed("plain")));
        assert!(matches!(&v[1].0, Cow::Owned(s) if s == "esc\"aped"));
        let value = serde_json::json!(["x"]);
        let from_value: Vec<Str> = Vec::deserialize(&value).expect("value");
        assert!(matches!(from_value[0].0, Cow::Borrowed("x")));
        let yaml: Vec<Str> = serde_yaml_ng::from_str("[y]").expect("yaml");
        assert_eq!(&*yaml[0], "y");
    }
}
