//! The node-local interface over rtnetlink: find it, create it as a
//! `dummy` link when it is missing, bring it up, put the node-local
//! addresses on it (/32, /128), and take them away again. node-cache's
//! `netif` package does the same through vishvananda/netlink.

use std::io;
use std::net::IpAddr;

use futures::TryStreamExt;
use rtnetlink::packet_route::address::{AddressAttribute, AddressMessage};
use rtnetlink::packet_route::link::{InfoKind, LinkAttribute, LinkFlags, LinkInfo};
use rtnetlink::{Handle, LinkDummy, LinkUnspec};

/// `ENODEV`, `EEXIST`, `EOPNOTSUPP`: what the kernel answers for a missing
/// link, an address already there, and an unknown link type.
const ENODEV: i32 = 19;
const EEXIST: i32 = 17;
const EOPNOTSUPP: i32 = 95;

/// A netlink connection to the current network namespace.
pub struct Netlink {
    handle: Handle,
}

/// An interface as the kernel reports it.
pub struct LinkState {
    pub index: u32,
    pub up: bool,
    /// A `dummy` link: ours to delete at teardown. Any other kind (an
    /// existing interface named in `interface`) only loses our addresses.
    pub dummy: bool,
    pub addresses: Vec<(IpAddr, AddressMessage)>,
}

impl LinkState {
    pub fn has(&self, ip: &IpAddr) -> bool {
        self.addresses.iter().any(|(a, _)| a == ip)
    }
}

/// What [`Netlink::ensure`] had to do.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Repairs {
    pub created: bool,
    pub set_up: bool,
    pub added: Vec<IpAddr>,
}

/// A failed netlink step, with the step named (`create dummy link`, ...).
#[derive(Debug)]
pub struct LinkError {
    pub step: &'static str,
    pub source: io::Error,
}

impl LinkError {
    /// node-cache's `errortype`: creating the link, or anything else.
    pub fn errortype(&self) -> &'static str {
        if self.step.starts_with("create") {
            "interface_add"
        } else {
            "interface_check"
        }
    }
}

fn io_error(e: rtnetlink::Error) -> io::Error {
    match e {
        rtnetlink::Error::NetlinkError(m) => m.to_io(),
        other => io::Error::other(other.to_string()),
    }
}

fn step(step: &'static str) -> impl Fn(rtnetlink::Error) -> LinkError {
    move |e| LinkError {
        step,
        source: io_error(e),
    }
}

impl Netlink {
    /// Opens the connection; its driver runs on the current tokio runtime.
    pub fn connect() -> io::Result<Netlink> {
        let (connection, handle, _) = rtnetlink::new_connection()?;
        tokio::spawn(connection);
        Ok(Netlink { handle })
    }

    /// The interface `name` and its addresses, `None` when it does not exist.
    pub async fn state(&self, name: &str) -> Result<Option<LinkState>, LinkError> {
        let mut links = self.handle.link().get().match_name(name).execute();
        let link = match links.try_next().await {
            Ok(Some(link)) => link,
            Ok(None) => return Ok(None),
            Err(rtnetlink::Error::NetlinkError(m)) if m.raw_code().abs() == ENODEV => return Ok(None),
            Err(e) => return Err(step("read the interface")(e)),
        };
        let dummy = link.attributes.iter().any(|a| match a {
            LinkAttribute::LinkInfo(infos) => infos.iter().any(|i| matches!(i, LinkInfo::Kind(InfoKind::Dummy))),
            _ => false,
        });
        let index = link.header.index;
        let mut addresses = Vec::new();
        let mut found = self.handle.address().get().set_link_index_filter(index).execute();
        while let Some(m) = found.try_next().await.map_err(step("read the addresses"))? {
            let local = m.attributes.iter().find_map(|a| match a {
                AddressAttribute::Local(ip) => Some(*ip),
                _ => None,
            });
            let address = m.attributes.iter().find_map(|a| match a {
                AddressAttribute::Address(ip) => Some(*ip),
                _ => None,
            });
            if let Some(ip) = local.or(address) {
                if m.header.index == index {
                    addresses.push((ip, m));
                }
            }
        }
        Ok(Some(LinkState {
            index,
            up: link.header.flags.contains(LinkFlags::Up),
            dummy,
            addresses,
        }))
    }

    /// Makes `name` exist, be up and carry `addresses`; returns what it
    /// changed.
    pub async fn ensure(&self, name: &str, addresses: &[IpAddr]) -> Result<Repairs, LinkError> {
        let mut repairs = Repairs::default();
        let state = match self.state(name).await? {
            Some(s) => s,
            None => {
                let created = self
                    .handle
                    .link()
                    .add(LinkDummy::new(name).up().build())
                    .execute()
                    .await;
                match created {
                    Ok(()) => {}
                    Err(rtnetlink::Error::NetlinkError(m)) if m.raw_code().abs() == EOPNOTSUPP => {
                        return Err(LinkError {
                            step: "create a dummy link (this kernel has no `dummy` link type: load the dummy module, or name an existing interface)",
                            source: m.to_io(),
                        })
                    }
                    Err(e) => return Err(step("create a dummy link")(e)),
                }
                repairs.created = true;
                self.state(name).await?.ok_or(LinkError {
                    step: "find the link just created",
                    source: io::Error::from(io::ErrorKind::NotFound),
                })?
            }
        };
        if !state.up {
            let up = LinkUnspec::new_with_index(state.index).up().build();
            self.handle
                .link()
                .set(up)
                .execute()
                .await
                .map_err(step("bring it up"))?;
            repairs.set_up = !repairs.created;
        }
        for ip in addresses.iter().filter(|ip| !state.has(ip)) {
            let prefix = if ip.is_ipv4() { 32 } else { 128 };
            match self.handle.address().add(state.index, *ip, prefix).execute().await {
                Ok(()) => repairs.added.push(*ip),
                Err(rtnetlink::Error::NetlinkError(m)) if m.raw_code().abs() == EEXIST => {}
                Err(e) => return Err(step("add an address")(e)),
            }
        }
        Ok(repairs)
    }

    /// Deletes `name` when it is a dummy link, otherwise takes `addresses`
    /// off it. A missing interface is not an error.
    pub async fn remove(&self, name: &str, addresses: &[IpAddr]) -> Result<(), LinkError> {
        let Some(state) = self.state(name).await? else {
            return Ok(());
        };
        if state.dummy {
            return self
                .handle
                .link()
                .del(state.index)
                .execute()
                .await
                .map_err(step("delete the link"));
        }
        for (ip, message) in state.addresses {
            if addresses.contains(&ip) {
                self.handle
                    .address()
                    .del(message)
                    .execute()
                    .await
                    .map_err(step("delete an address"))?;
            }
        }
        Ok(())
    }
}
