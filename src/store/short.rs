//! Short names held inline: a Kubernetes object name of up to 22 bytes
//! (most Service names, every slice name's suffix) takes no heap chunk of
//! its own; a longer one is a shared string. 24 bytes either way, where
//! an `Arc<str>` took 16 and a 48-byte heap chunk for a 9-byte name
//! (4.8 MB at 100,000 Services). Reads as a `str`.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// Bytes held inline, at most.
const INLINE: usize = 22;

#[derive(Clone)]
pub struct Short(Repr);

#[derive(Clone)]
enum Repr {
    Inline(u8, [u8; INLINE]),
    Shared(Arc<str>),
}

impl Short {
    pub fn new(text: &str) -> Short {
        match text.len() {
            n if n <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..n].copy_from_slice(text.as_bytes());
                Short(Repr::Inline(n as u8, bytes))
            }
            _ => Short(Repr::Shared(Arc::from(text))),
        }
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            // Always valid: copied from a `str` whole.
            Repr::Inline(n, bytes) => std::str::from_utf8(&bytes[..usize::from(*n)]).unwrap_or_default(),
            Repr::Shared(s) => s,
        }
    }
}

impl Deref for Short {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Short {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Short {
    fn from(text: &str) -> Short {
        Short::new(text)
    }
}

impl PartialEq for Short {
    fn eq(&self, other: &Short) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Short {}

impl PartialEq<str> for Short {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialOrd for Short {
    fn partial_cmp(&self, other: &Short) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Short {
    fn cmp(&self, other: &Short) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

/// Hashes as the `str` does, so maps keyed by it are searched with a `str`.
impl Hash for Short {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl fmt::Debug for Short {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Short {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_up_to_22_bytes_shared_beyond_both_as_str() {
        assert_eq!(std::mem::size_of::<Short>(), 24);
        for text in [
            "",
            "svc-12345",
            "a234567890123456789012",
            "a2345678901234567890123",
            "é-ü",
        ] {
            let s = Short::new(text);
            assert_eq!(&*s, text);
            assert_eq!(s, Short::from(text));
            assert_eq!(format!("{s}"), text);
        }
        assert!(matches!(Short::new("a234567890123456789012").0, Repr::Inline(22, _)));
        assert!(matches!(Short::new("a2345678901234567890123").0, Repr::Shared(_)));
        assert!(Short::new("a") < Short::new("b"));
        let hash = |h: &dyn Fn(&mut std::collections::hash_map::DefaultHasher)| {
            let mut state = std::collections::hash_map::DefaultHasher::new();
            h(&mut state);
            state.finish()
        };
        assert_eq!(hash(&|s| Short::new("web").hash(s)), hash(&|s| "web".hash(s)));
    }
}
