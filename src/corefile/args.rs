//! Checked access to a directive's or option's arguments, so that every
//! directive reports wrong counts and bad values the same way; and the one
//! reading of a zone word, a name or a CIDR standing for its reverse zones
//! (hosts, forward, autopath, fallthrough).

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

use hickory_proto::rr::Name;

use super::blocks::{Directive, Line};
use super::lexer::{Pos, Word};
use super::problem::ConfigError;

/// A name and its arguments, from a directive line or an option line.
pub struct Args<'a> {
    pub name: &'a Word,
    pub args: &'a [Word],
}

impl<'a> From<&'a Directive> for Args<'a> {
    fn from(d: &'a Directive) -> Self {
        Args {
            name: &d.name,
            args: &d.args,
        }
    }
}

impl<'a> From<&'a Line> for Args<'a> {
    fn from(l: &'a Line) -> Self {
        Args {
            name: &l.name,
            args: &l.args,
        }
    }
}

impl<'a> Args<'a> {
    pub fn pos(&self) -> &Pos {
        &self.name.pos
    }

    /// Checks `min <= count <= max`.
    pub fn count(&self, min: usize, max: usize, errors: &mut Vec<ConfigError>) -> bool {
        let n = self.args.len();
        if n >= min && n <= max {
            return true;
        }
        let want = match (min, max) {
            (a, b) if a == b && a == 0 => "no arguments".to_string(),
            (a, b) if a == b => format!("exactly {a} argument{}", if a == 1 { "" } else { "s" }),
            (a, usize::MAX) => format!("at least {a} argument{}", if a == 1 { "" } else { "s" }),
            (a, b) => format!("{a} to {b} arguments"),
        };
        let at = self.args.get(max).map_or(self.pos(), |w| &w.pos);
        errors.push(ConfigError::new(
            at,
            format!("'{}' takes {want}, got {n}", self.name.text),
        ));
        false
    }

    /// Parses argument `i` as a Go-style duration (`500ms`, `5s`, `1m30s`).
    pub fn duration(&self, i: usize, errors: &mut Vec<ConfigError>) -> Option<Duration> {
        let w = self.args.get(i)?;
        let parsed = parse_duration(&w.text);
        if parsed.is_none() {
            errors.push(ConfigError::new(
                &w.pos,
                format!("{}: '{}' is not a duration (e.g. 5s)", self.name.text, w.text),
            ));
        }
        parsed
    }

    /// Parses argument `i` with `FromStr`, reporting `what` on failure.
    pub fn parse<T: FromStr>(&self, i: usize, what: &str, errors: &mut Vec<ConfigError>) -> Option<T> {
        let w = self.args.get(i)?;
        match w.text.parse() {
            Ok(v) => Some(v),
            Err(_) => {
                errors.push(ConfigError::new(
                    &w.pos,
                    format!("'{}': '{}' is not {what}", self.name.text, w.text),
                ));
                None
            }
        }
    }
}

/// The value `word` names among `choices` (word, value); else the error
/// `WHAT: 'WORD' is not one of A, B, C` at the word.
pub fn choice<T: Copy>(word: &Word, what: &str, choices: &[(&str, T)], errors: &mut Vec<ConfigError>) -> Option<T> {
    if let Some((_, v)) = choices.iter().find(|(w, _)| *w == word.text) {
        return Some(*v);
    }
    let names: Vec<&str> = choices.iter().map(|(w, _)| *w).collect();
    errors.push(ConfigError::new(
        &word.pos,
        format!("{what}: '{}' is not one of {}", word.text, names.join(", ")),
    ));
    None
}

/// A DNS zone from config text: lower-cased and fully qualified.
pub fn zone(word: &Word, errors: &mut Vec<ConfigError>) -> Option<Name> {
    let text = word.text.trim_start_matches("dns://");
    let parsed = Name::from_ascii(text).map(|n| n.to_lowercase());
    match parsed {
        Ok(mut n) if !text.is_empty() => {
            n.set_fqdn(true);
            Some(n)
        }
        _ => {
            errors.push(ConfigError::new(
                &word.pos,
                format!("'{}' is not a valid zone name", word.text),
            ));
            None
        }
    }
}

/// `name` in wire form (length-prefixed labels, the root label last),
/// ASCII lower-cased: what a question's wire bytes are compared with
/// without decoding them (a guard's and block zones on the replay path).
pub fn lower_wire(name: &Name) -> Box<[u8]> {
    let mut wire = Vec::with_capacity(name.len() + 1);
    for label in name.iter() {
        wire.push(label.len() as u8); // at most 63: a Name's labels are checked
        wire.extend(label.iter().map(u8::to_ascii_lowercase));
    }
    wire.push(0);
    wire.into_boxed_slice()
}

/// A listen address as CoreDNS writes it: `:PORT`, `HOST:PORT` or `[V6]:PORT`.
pub fn listen_addr(word: &Word, errors: &mut Vec<ConfigError>) -> Option<SocketAddr> {
    let text = word.text.as_str();
    let parsed = match text.strip_prefix(':') {
        Some(port) => port
            .parse::<u16>()
            .ok()
            .map(|p| SocketAddr::new(IpAddr::from([0, 0, 0, 0]), p)),
        None => text.parse::<SocketAddr>().ok().or_else(|| {
            let (host, port) = text.rsplit_once(':')?;
            let ip = if host == "localhost" {
                IpAddr::from([127, 0, 0, 1])
            } else {
                host.parse().ok()?
            };
            Some(SocketAddr::new(ip, port.parse().ok()?))
        }),
    };
    if parsed.is_none() {
        errors.push(ConfigError::new(
            &word.pos,
            format!("'{text}' is not a listen address (':PORT' or 'IP:PORT')"),
        ));
    }
    parsed
}

/// Parses Go-style durations: `500ms`, `5s`, `1m30s`, `2h`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    if rest == "0" {
        return Some(total); // Go's time.ParseDuration takes a bare 0 too
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let value: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += Duration::try_from_secs_f64(value * scale).ok()?;
    }
    Some(total)
}

/// A network written `ADDRESS/LENGTH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Net {
    pub addr: IpAddr,
    pub len: u8,
}

impl Net {
    /// `ADDRESS/LENGTH` with LENGTH in range for the family; `None` else.
    pub fn parse(text: &str) -> Option<Net> {
        let (ip, len) = text.split_once('/')?;
        let addr = ip.parse::<IpAddr>().ok()?;
        let len = len.parse::<u8>().ok()?;
        (len <= if addr.is_ipv4() { 32 } else { 128 }).then_some(Net { addr, len })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let (a, n, bits) = match (ip, self.addr) {
            (IpAddr::V4(a), IpAddr::V4(n)) => (u128::from(a.to_bits()), u128::from(n.to_bits()), 32),
            (IpAddr::V6(a), IpAddr::V6(n)) => (a.to_bits(), n.to_bits(), 128),
            _ => return false,
        };
        let shift = bits - u32::from(self.len);
        shift >= bits || (a >> shift) == (n >> shift)
    }

    /// The reverse zones covering this network, each on a label boundary
    /// (8 bits for IPv4, 4 for IPv6): `10.0.0.0/7` is `10.in-addr.arpa.`
    /// and `11.in-addr.arpa.`, as CoreDNS splits it.
    pub fn reverse_zones(&self) -> Vec<Name> {
        let (digits, step, bits): (Vec<u8>, u8, u8) = match self.addr {
            IpAddr::V4(a) => (a.octets().to_vec(), 8, 32),
            IpAddr::V6(a) => (a.octets().iter().flat_map(|b| [b >> 4, b & 15]).collect(), 4, 128),
        };
        let labels = usize::from(self.len.div_ceil(step));
        let spread = labels * usize::from(step) - usize::from(self.len);
        let mut zones = Vec::new();
        for k in 0..(1usize << spread) {
            let mut d = digits[..labels.min(digits.len())].to_vec();
            if let Some(last) = d.last_mut() {
                let keep = (*last as usize) >> spread << spread;
                *last = u8::try_from(keep | k).unwrap_or(*last);
            }
            let mut text: String = d.iter().rev().map(|x| format!("{}.", fmt_digit(*x, step))).collect();
            text.push_str(if bits == 32 { "in-addr.arpa." } else { "ip6.arpa." });
            zones.extend(Name::from_ascii(&text).ok());
        }
        zones
    }
}

fn fmt_digit(x: u8, step: u8) -> String {
    if step == 4 {
        format!("{x:x}")
    } else {
        x.to_string()
    }
}

/// Zones as CoreDNS takes them: names, or CIDRs standing for the
/// reverse zones that cover them.
pub fn zones(words: &[Word], errors: &mut Vec<ConfigError>) -> Vec<Name> {
    let mut out = Vec::new();
    for w in words {
        match Net::parse(&w.text) {
            Some(net) => out.extend(net.reverse_zones()),
            None => out.extend(zone(w, errors)),
        }
    }
    out
}

/// `items` separated by spaces, or `empty` when there are none (for log
/// lines and `clusterdns doctor`).
pub(crate) fn spaced<T: std::fmt::Display>(items: &[T], empty: &str) -> String {
    if items.is_empty() {
        return empty.to_string();
    }
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ")
}
