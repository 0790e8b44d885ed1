//! `on EVENT COMMAND [ARGS...] [&]`: each line one hook, a block's lines
//! one setup (kept in the order written). EVENT is `startup`, `shutdown`
//! or `certrenew`, in any case; a missing or unknown EVENT, or no
//! COMMAND, is an error naming it.

use std::any::Any;
use std::sync::Arc;

use crate::corefile::blocks::Directive;
use crate::corefile::problem::ConfigError;
use crate::corefile::words::Block;
use crate::query::plugins::chain::Setup;

/// A process event `on` runs commands at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Startup,
    Shutdown,
    /// Accepted as caddy does; never fires.
    CertRenew,
}

impl Event {
    pub fn name(self) -> &'static str {
        match self {
            Event::Startup => "startup",
            Event::Shutdown => "shutdown",
            Event::CertRenew => "certrenew",
        }
    }
}

/// One `on` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    pub event: Event,
    pub command: String,
    pub args: Vec<String>,
    /// A trailing `&`: started, not waited for.
    pub background: bool,
}

impl Hook {
    /// The command line as written (without `&`).
    pub fn shown(&self) -> String {
        std::iter::once(&self.command)
            .chain(&self.args)
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A block's `on` lines.
#[derive(Debug, Default)]
pub struct OnSetup {
    pub hooks: Vec<Hook>,
}

/// Reads one `on` line into the block's setup (`earlier`: its lines so
/// far); `None` when the line is wrong.
pub fn parse(d: &Directive, earlier: Option<&Arc<dyn Setup>>, errors: &mut Vec<ConfigError>) -> Option<Arc<dyn Setup>> {
    let hook = hook(d, errors)?;
    let mut hooks = hooks(earlier);
    hooks.push(hook);
    Some(Arc::new(OnSetup { hooks }))
}

/// The line's hook, or an error.
fn hook(d: &Directive, errors: &mut Vec<ConfigError>) -> Option<Hook> {
    let mut fail = |pos, message: String| {
        errors.push(ConfigError::new(pos, format!("on: {message}")));
        None
    };
    let Some(word) = d.args.first() else {
        return fail(
            &d.name.pos,
            "wrong argument count: on startup|shutdown|certrenew COMMAND [ARGS...] [&]".into(),
        );
    };
    let event = match word.text.to_ascii_lowercase().as_str() {
        "startup" => Event::Startup,
        "shutdown" => Event::Shutdown,
        "certrenew" => Event::CertRenew,
        _ => {
            let message = format!(
                "wrong event name or event not supported: '{}' (startup, shutdown, certrenew)",
                word.text
            );
            return fail(&word.pos, message);
        }
    };
    let mut words: Vec<String> = d.args[1..].iter().map(|w| w.text.clone()).collect();
    let background = words.last().is_some_and(|w| w == "&");
    if background {
        words.pop();
    }
    if words.is_empty() {
        return fail(&word.pos, format!("no command after '{}'", word.text));
    }
    let command = words.remove(0);
    Some(Hook {
        event,
        command,
        args: words,
        background,
    })
}

/// The hooks of a block's `on` setup, if it has one.
pub fn hooks(setup: Option<&Arc<dyn Setup>>) -> Vec<Hook> {
    let setup = setup.and_then(|s| (&**s as &dyn Any).downcast_ref::<OnSetup>());
    setup.map(|s| s.hooks.clone()).unwrap_or_default()
}

impl Setup for OnSetup {
    fn name(&self) -> &'static str {
        "on"
    }

    fn print(&self, b: &mut Block) {
        for h in &self.hooks {
            let tail = if h.background { " &" } else { "" };
            b.line(1, format_args!("on {} {}{tail}", h.event.name(), h.shown()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Event, Hook};
    use crate::config::tests::server_block;

    /// caddy's onevent TestCommandParse: each row's event, command and
    /// arguments (`&` kept apart).
    #[test]
    fn lines_as_caddy_reads_them() {
        let hook = |e, c: &str, a: &[&str], bg| Hook {
            event: e,
            command: c.into(),
            args: a.iter().map(|s| s.to_string()).collect(),
            background: bg,
        };
        let rows = [
            (
                "on startup cmd arg1 arg2",
                hook(Event::Startup, "cmd", &["arg1", "arg2"], false),
            ),
            (
                "on shutdown cmd arg1 arg2 &",
                hook(Event::Shutdown, "cmd", &["arg1", "arg2"], true),
            ),
            (
                "on certrenew cmd arg1 arg2",
                hook(Event::CertRenew, "cmd", &["arg1", "arg2"], false),
            ),
            ("on STARTUP cmd", hook(Event::Startup, "cmd", &[], false)),
        ];
        for (text, want) in rows {
            let server = server_block(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
            assert_eq!(super::hooks(server.setup("on")), vec![want], "{text}");
        }
        for bad in ["on", "on xyz cmd arg", "on startup", "on shutdown &"] {
            assert!(server_block(bad).is_err(), "{bad}");
        }
        let two = server_block("on startup a\non shutdown b &").expect("two lines");
        assert_eq!(super::hooks(two.setup("on")).len(), 2);
    }
}
