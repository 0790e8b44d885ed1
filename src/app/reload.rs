//! `reload`: the Corefile checked every interval; a changed file that
//! loads is built beside the running configuration and switched in.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::runtime::{startup_wait, Runtime};
use crate::admin::State;
use crate::config::Config;
use crate::query::plugins::on::setup::Event::Startup;
use crate::watch;

/// Checks the Corefile every `interval` (± `jitter`); a changed file that
/// loads replaces the running configuration, one that does not is logged
/// and counted while the old one keeps serving.
pub(super) async fn reload_loop(
    rt: &mut Runtime,
    state: &Arc<State>,
    mut config: Config,
    mut last: Option<Vec<u8>>,
    (mut interval, mut jitter): (Duration, Duration),
    running: &std::sync::Mutex<Config>,
) {
    let read = |c: &Config| std::fs::read(&c.path).ok();
    loop {
        let spread = jitter.as_secs_f64() * (fastrand::f64() * 2.0 - 1.0);
        tokio::time::sleep(Duration::from_secs_f64((interval.as_secs_f64() + spread).max(1.0))).await;
        let now = read(&config);
        if now == last {
            continue;
        }
        last = now;
        match crate::config::load(&config.path, config.default_port) {
            Err(errors) => {
                rt.metrics.reload_failed.fetch_add(1, Ordering::Relaxed);
                tracing::error!(target: "reload", "{} did not load; still running the previous configuration:\n{errors}", config.path.display());
            }
            Ok(new) => {
                if (new.health.as_ref().map(|h| h.addr), new.ready, new.prometheus)
                    != (config.health.as_ref().map(|h| h.addr), config.ready, config.prometheus)
                {
                    tracing::warn!(target: "reload", "health, ready and prometheus addresses change only on restart");
                }
                if new.prometheus_tls.as_ref().map(|w| &w.1) != config.prometheus_tls.as_ref().map(|w| &w.1) {
                    tracing::warn!(target: "reload", "prometheus tls changes only on restart (its certificate files are read again when they change)");
                }
                if new.nodelocal != config.nodelocal {
                    tracing::warn!(target: "reload", "nodelocal changes only on restart");
                }
                let built = rt.build(&new);
                watch::startup::await_sync(&built.live.stores, startup_wait(&new)).await;
                match rt.switch(built, state) {
                    Ok(()) => {
                        tracing::info!(target: "reload", "reloaded {}", new.path.display());
                        // `on startup` runs for each configuration switched in (caddy's instance startup)
                        let setups = new.servers.iter().map(|s| s.setup("on"));
                        crate::query::plugins::on::fire(setups, Startup).await;
                    }
                    Err(e) => {
                        rt.metrics.reload_failed.fetch_add(1, Ordering::Relaxed);
                        tracing::error!(target: "reload", "{e}; listeners that did bind serve the new configuration");
                    }
                }
                if let Some((i, j)) = new.reload {
                    (interval, jitter) = (i, j);
                }
                if let Ok(mut slot) = running.lock() {
                    *slot = new.clone();
                }
                config = new;
            }
        }
    }
}
