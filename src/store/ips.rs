//! A Service's cluster IPs: nearly every Service has one, held inline
//! (a boxed slice of one cost a 32-byte heap chunk per Service, and a
//! copy on every change of the Service's entry); dual-stack Services
//! keep theirs in a box. Either reads as a slice.

use std::net::IpAddr;
use std::ops::Deref;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ips {
    One(IpAddr),
    Many(Box<[IpAddr]>),
}

impl Deref for Ips {
    type Target = [IpAddr];

    fn deref(&self) -> &[IpAddr] {
        match self {
            Ips::One(ip) => std::slice::from_ref(ip),
            Ips::Many(ips) => ips,
        }
    }
}

impl From<Vec<IpAddr>> for Ips {
    fn from(ips: Vec<IpAddr>) -> Ips {
        match ips.as_slice() {
            [one] => Ips::One(*one),
            _ => Ips::Many(ips.into_boxed_slice()),
        }
    }
}

impl FromIterator<IpAddr> for Ips {
    fn from_iter<I: IntoIterator<Item = IpAddr>>(iter: I) -> Ips {
        iter.into_iter().collect::<Vec<_>>().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_inline_more_boxed_both_as_slices() {
        let a: IpAddr = "10.0.0.1".parse().expect("ip");
        let b: IpAddr = "fd00::1".parse().expect("ip");
        assert_eq!(Ips::from(vec![a]), Ips::One(a));
        assert_eq!(&*Ips::from(vec![a]), &[a]);
        assert_eq!(&*[a, b].into_iter().collect::<Ips>(), &[a, b]);
        assert!(Ips::from(Vec::new()).is_empty());
    }
}
