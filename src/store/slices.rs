//! A Service's EndpointSlices: most Services have one, held inline in
//! the Service's own record (a boxed list of one cost a 72-byte heap
//! chunk per Service, 3.2 MB more at 100,000 Services); more, or none,
//! in a box. Either reads as a slice.

use std::ops::Deref;

use super::endpoints::Endpoints;
use super::ports::Ports;
use super::short::Short;

/// One EndpointSlice of a service: its ports and ready endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// Its name, held after its service's when it begins with the
    /// service's name and a dash (the EndpointSlice controller's
    /// `generateName`: `web-x7k2p` is held as `-x7k2p`, inline; a name
    /// never begins with a dash). No heap chunk per slice: 4.8 MB at
    /// 100,000 Services.
    name: Short,
    pub ports: Ports,
    pub endpoints: Endpoints,
}

impl Slice {
    /// Slice `name` of the service (or import) named `owner`.
    pub fn new(owner: &str, name: &str, ports: Ports, endpoints: Endpoints) -> Slice {
        let name = match name.strip_prefix(owner) {
            Some(rest) if rest.starts_with('-') => Short::new(rest),
            _ => Short::new(name),
        };
        Slice { name, ports, endpoints }
    }

    /// Whether this slice of `owner` is named `name`.
    pub fn named(&self, owner: &str, name: &str) -> bool {
        match self.name.starts_with('-') {
            true => name.strip_prefix(owner) == Some(&*self.name),
            false => *self.name == *name,
        }
    }

    /// Its name, as a slice of `owner`.
    pub fn name(&self, owner: &str) -> String {
        match self.name.starts_with('-') {
            true => format!("{owner}{}", &*self.name),
            false => self.name.to_string(),
        }
    }
}

/// A service's slices, in the order they arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slices {
    One(Slice),
    /// None, or more than one.
    Many(Box<[Slice]>),
}

impl Default for Slices {
    fn default() -> Self {
        Slices::Many(Box::default())
    }
}

impl Deref for Slices {
    type Target = [Slice];

    fn deref(&self) -> &[Slice] {
        match self {
            Slices::One(one) => std::slice::from_ref(one),
            Slices::Many(all) => all,
        }
    }
}

impl<'a> IntoIterator for &'a Slices {
    type Item = &'a Slice;
    type IntoIter = std::slice::Iter<'a, Slice>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl From<Vec<Slice>> for Slices {
    fn from(mut all: Vec<Slice>) -> Slices {
        match (all.pop(), all.is_empty()) {
            (Some(one), true) => Slices::One(one),
            (Some(last), false) => {
                all.push(last);
                Slices::Many(all.into_boxed_slice())
            }
            (None, _) => Slices::default(),
        }
    }
}

impl Slices {
    pub fn into_vec(self) -> Vec<Slice> {
        match self {
            Slices::One(one) => vec![one],
            Slices::Many(all) => all.into_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(owner: &str, name: &str) -> Slice {
        Slice::new(owner, name, Ports::default(), Endpoints::default())
    }

    #[test]
    fn names_after_the_service_held_short_others_whole() {
        let s = slice("web", "web-x7k2p");
        assert!(matches!(&*s.name, "-x7k2p"));
        assert!(s.named("web", "web-x7k2p"));
        assert!(!s.named("web", "web-x7k2q") && !s.named("web", "-x7k2p") && !s.named("we", "web-x7k2p"));
        assert_eq!(s.name("web"), "web-x7k2p");
        let other = slice("web", "legacy");
        assert!(other.named("web", "legacy") && !other.named("web", "web-legacy"));
        assert_eq!(other.name("web"), "legacy");
        assert_eq!(slice("web", "webx").name("web"), "webx");
    }

    #[test]
    fn one_inline_more_or_none_boxed_all_as_slices() {
        assert_eq!(std::mem::size_of::<Slice>(), 64);
        assert_eq!(std::mem::size_of::<Slices>(), 64);
        let (a, b) = (slice("s", "s-a"), slice("s", "s-b"));
        assert!(matches!(Slices::from(vec![a.clone()]), Slices::One(_)));
        assert_eq!(&*Slices::from(vec![a.clone(), b.clone()]), &[a.clone(), b.clone()]);
        assert!(Slices::from(Vec::new()).is_empty());
        assert_eq!(Slices::from(vec![a.clone(), b.clone()]).into_vec(), vec![a.clone(), b]);
        assert_eq!((&Slices::from(vec![a.clone()])).into_iter().count(), 1);
    }
}
