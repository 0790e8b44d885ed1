//! Checked access to a directive's or option's arguments, so that every
//! directive reports wrong counts and bad values the same way.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

use hickory_proto::rr::Name;

use super::blocks::{Directive, Line};
use super::lexer::{Pos, Word};
use super::ConfigError;

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
