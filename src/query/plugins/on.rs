//! `on startup|shutdown|certrenew COMMAND [ARGS...] [&]` (the caddy
//! `onevent` plugin CoreDNS's `plugin.cfg` links): commands run at a
//! process event. `startup` runs once the configuration serves (its
//! listeners bound), after the first start and after every reload that
//! switched in, as caddy's instance-startup event; `shutdown` runs when a
//! signal stops the server, before lameduck and the drain, with the
//! configuration running then. A trailing `&` starts the command and goes
//! on; without it the command is waited for. `certrenew` is accepted and,
//! as in CoreDNS (which renews no certificates through caddy), never
//! fires. A command that cannot start or exits unsuccessfully is logged
//! (`on` target, error level) and changes nothing else. The command's
//! standard streams are the server's.
//!
//! Nothing of it is on the query path: the directive's setup lives in the
//! block like a plugin's ([`setup`]) and the app asks [`fire`] at each
//! event.

pub mod setup;

use std::process::Stdio;

use std::sync::Arc;

use crate::query::plugins::chain::Setup;
use setup::{Event, Hook};

/// Runs the `on EVENT` commands of the server blocks' `on` setups
/// (`setups`, one a block), in the order written; waits for those
/// without `&`.
pub async fn fire<'a>(setups: impl Iterator<Item = Option<&'a Arc<dyn Setup>>>, event: Event) {
    for hook in setups.flat_map(setup::hooks) {
        if hook.event == event {
            run(&hook).await;
        }
    }
}

/// Runs one command, logging how it went.
async fn run(hook: &Hook) {
    let shown = hook.shown();
    let mut cmd = tokio::process::Command::new(&hook.command);
    cmd.args(&hook.args).stdin(Stdio::null());
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            tracing::error!(target: "on", "{} command {shown:?} did not start: {e}", hook.event.name());
            return;
        }
    };
    let event = hook.event.name();
    let waited = async move {
        match child.wait().await {
            Ok(status) if status.success() => {}
            Ok(status) => tracing::error!(target: "on", "{event} command {shown:?} failed: {status}"),
            Err(e) => tracing::error!(target: "on", "{event} command {shown:?}: {e}"),
        }
    };
    if hook.background {
        tracing::info!(target: "on", "{event}: started {:?} in the background", hook.shown());
        tokio::spawn(waited);
    } else {
        tracing::info!(target: "on", "{event}: running {:?}", hook.shown());
        waited.await;
    }
}
