//! `trace [ENDPOINT-TYPE] [ENDPOINT] { every N; service NAME;
//! client_server [BOOL]; datadog_analytics_rate RATE;
//! zipkin_max_backlog_size N; zipkin_max_batch_size N;
//! zipkin_max_batch_interval DURATION }`, as CoreDNS reads it.
//! ENDPOINT-TYPE is `zipkin` (the default) or `datadog`. A zipkin ENDPOINT
//! defaults to `localhost:9411`; one without `http` becomes
//! `http://ENDPOINT/api/v2/spans`. A datadog ENDPOINT is the agent's
//! `HOST[:PORT]` (default `localhost:8126`, port 8126), sent to at
//! `/v0.3/traces`. Only `http://` URLs are sent to.

use std::any::Any;
use std::net::SocketAddr;
use std::sync::Arc;

use super::config::TraceConfig;
use super::counters::Counters;
use super::tracer::Tracer;
use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt};
use crate::corefile::problem::ConfigError;
use crate::corefile::words::{duration, Block};
use crate::query::plugins::chain::Setup;

/// The options of the block.
const OPTIONS: &[Opt<TraceConfig>] = &[
    Opt::new("every", (1, 1), |a, c, errors| {
        c.every = a.parse(0, "a whole number", errors).unwrap_or(c.every)
    }),
    Opt::new("service", (1, 1), |a, c, _| c.service = a.args[0].text.clone()),
    Opt::new("client_server", (0, 1), |a, c, errors| {
        c.client_server = match a.args.first() {
            None => true,
            Some(_) => a.parse(0, "true or false", errors).unwrap_or(c.client_server),
        }
    }),
    Opt::new("datadog_analytics_rate", (0, 1), |a, c, errors| {
        let rate = match a.args.first() {
            None => 0.0,
            Some(_) => match a.parse::<f64>(0, "a number", errors) {
                Some(r) => r,
                None => return,
            },
        };
        if !(0.0..=1.0).contains(&rate) {
            let message = format!("trace: datadog analytics rate must be between 0 and 1, '{rate}' is not supported");
            errors.push(ConfigError::new(&a.name.pos, message));
        }
        c.analytics_rate = Some(rate);
    }),
    Opt::new("zipkin_max_backlog_size", (1, 1), |a, c, errors| {
        c.backlog = a.parse(0, "a whole number", errors).unwrap_or(c.backlog)
    }),
    Opt::new("zipkin_max_batch_size", (1, 1), |a, c, errors| {
        c.batch_size = a.parse(0, "a whole number", errors).unwrap_or(c.batch_size)
    }),
    Opt::new("zipkin_max_batch_interval", (1, 1), |a, c, errors| {
        c.batch_interval = a.duration(0, errors).unwrap_or(c.batch_interval)
    }),
];

/// A block's `trace`, as the configuration holds it.
#[derive(Debug)]
pub struct TraceSetup {
    pub cfg: Arc<TraceConfig>,
}

/// Reads `trace` (a later line replaces an earlier one, as CoreDNS's
/// parser keeps the last); `None` when it is wrong.
pub fn parse(d: &Directive, errors: &mut Vec<ConfigError>) -> Option<Arc<dyn Setup>> {
    let before = errors.len();
    let mut cfg = TraceConfig::default();
    options::read("trace", &d.options, OPTIONS, &mut cfg, errors);
    if Args::from(d).count(0, 2, errors) {
        let words: Vec<&str> = d.args.iter().map(|w| w.text.as_str()).collect();
        let (kind, endpoint) = match words[..] {
            [] => ("zipkin".to_string(), None),
            [ep] => ("zipkin".to_string(), Some(ep)),
            [kind, ep] => (kind.to_ascii_lowercase(), Some(ep)),
            _ => unreachable!("counted"),
        };
        let at = d.args.first().map_or(&d.name.pos, |w| &w.pos);
        match kind.as_str() {
            "zipkin" => cfg.endpoint = normalized(endpoint.unwrap_or("localhost:9411")),
            "datadog" => {
                let ep = endpoint.unwrap_or(super::datadog::AGENT);
                cfg.datadog = true;
                match super::datadog::endpoint(ep) {
                    Some(url) => cfg.endpoint = url,
                    None => errors.push(ConfigError::new(
                        at,
                        format!("trace: datadog agent '{ep}': only http:// agents are supported (write HOST:PORT)"),
                    )),
                }
            }
            other => {
                let message = format!("trace: tracing endpoint type '{other}' is not supported (zipkin)");
                errors.push(ConfigError::new(at, message));
            }
        }
        if kind == "zipkin" && !cfg.endpoint.starts_with("http://") {
            let message = format!(
                "trace: endpoint '{}': only http:// collectors are supported (write http://HOST:PORT/PATH)",
                cfg.endpoint
            );
            errors.push(ConfigError::new(at, message));
        }
    }
    if cfg.batch_size == 0 || cfg.backlog == 0 {
        let message = "trace: zipkin_max_batch_size and zipkin_max_backlog_size must be at least 1";
        errors.push(ConfigError::new(&d.name.pos, message));
    }
    (errors.len() == before).then(|| Arc::new(TraceSetup { cfg: Arc::new(cfg) }) as Arc<dyn Setup>)
}

/// CoreDNS's rule: an endpoint without `http` is `http://EP/api/v2/spans`.
fn normalized(ep: &str) -> String {
    match ep.contains("http") {
        true => ep.to_string(),
        false => format!("http://{ep}/api/v2/spans"),
    }
}

/// The tracer of a block's `trace` setup, if it has one, its counters
/// labelled `server`, its spans' local endpoint `local` (the block's
/// first bound address and its port, as CoreDNS's service endpoint);
/// starts the reporter (call inside the runtime).
pub fn tracer(setup: Option<&Arc<dyn Setup>>, server: &str, local: Option<SocketAddr>) -> Option<Arc<Tracer>> {
    let setup = setup.and_then(|s| (&**s as &dyn Any).downcast_ref::<TraceSetup>())?;
    let cfg = TraceConfig {
        local,
        ..(*setup.cfg).clone()
    };
    Some(Arc::new(Tracer::start(Arc::new(cfg), Counters::new(server))))
}

impl Setup for TraceSetup {
    fn name(&self) -> &'static str {
        "trace"
    }

    fn print(&self, b: &mut Block) {
        let c = &self.cfg;
        let mut options = vec![
            format!("every {}", c.every),
            format!("service {}", c.service),
            format!("client_server {}", c.client_server),
            format!("zipkin_max_backlog_size {}", c.backlog),
            format!("zipkin_max_batch_size {}", c.batch_size),
            format!("zipkin_max_batch_interval {}", duration(c.batch_interval)),
        ];
        if let Some(rate) = c.analytics_rate {
            options.push(format!("datadog_analytics_rate {rate}"));
        }
        match c.datadog {
            true => b.directive(
                format!("trace datadog {}", super::datadog::agent(&c.endpoint)),
                &options,
            ),
            false => b.directive(format!("trace zipkin {}", c.endpoint), &options),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::config::tests::server_block;

    /// CoreDNS's TestTraceParse rows that load: endpoint, every, service,
    /// client_server and the zipkin sizes (0: the reporter's default).
    #[test]
    fn values_as_coredns_reads_them() {
        let default = "http://localhost:9411/api/v2/spans";
        let rows = [
            ("trace", default, 1, "coredns", false, (1000, 100, 1)),
            (
                "trace localhost:1234",
                "http://localhost:1234/api/v2/spans",
                1,
                "coredns",
                false,
                (1000, 100, 1),
            ),
            (
                "trace http://localhost:1234/somewhere/else",
                "http://localhost:1234/somewhere/else",
                1,
                "coredns",
                false,
                (1000, 100, 1),
            ),
            (
                "trace zipkin localhost:1234",
                "http://localhost:1234/api/v2/spans",
                1,
                "coredns",
                false,
                (1000, 100, 1),
            ),
            ("trace {\n every 100\n}", default, 100, "coredns", false, (1000, 100, 1)),
            (
                "trace {\n every 100\n service foobar\nclient_server\n}",
                default,
                100,
                "foobar",
                true,
                (1000, 100, 1),
            ),
            (
                "trace {\n every 2\n client_server true\n}",
                default,
                2,
                "coredns",
                true,
                (1000, 100, 1),
            ),
            (
                "trace {\n client_server false\n}",
                default,
                1,
                "coredns",
                false,
                (1000, 100, 1),
            ),
            (
                "trace {\n zipkin_max_backlog_size 100\n zipkin_max_batch_size 200\n zipkin_max_batch_interval 10s\n}",
                default,
                1,
                "coredns",
                false,
                (100, 200, 10),
            ),
        ];
        for (text, endpoint, every, service, client_server, (backlog, batch, secs)) in rows {
            let server = server_block(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
            let setup = server.setup("trace").expect(text);
            let cfg = &(&**setup as &dyn std::any::Any)
                .downcast_ref::<super::TraceSetup>()
                .expect(text)
                .cfg;
            assert_eq!(cfg.endpoint, endpoint, "{text}");
            assert_eq!(
                (cfg.every, cfg.service.as_str(), cfg.client_server),
                (every, service, client_server),
                "{text}"
            );
            assert_eq!((cfg.backlog, cfg.batch_size), (backlog, batch), "{text}");
            assert_eq!(cfg.batch_interval, Duration::from_secs(secs), "{text}");
        }
        // the datadog rows: the agent's intake, and the analytics rate
        for (text, endpoint, rate) in [
            ("trace datadog localhost", "http://localhost:8126/v0.3/traces", None),
            (
                "trace datadog http://localhost:8127",
                "http://localhost:8127/v0.3/traces",
                None,
            ),
            (
                "trace datadog localhost {\n datadog_analytics_rate 0.1\n}",
                "http://localhost:8126/v0.3/traces",
                Some(0.1),
            ),
        ] {
            let server = server_block(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
            let setup = server.setup("trace").expect(text);
            let cfg = &(&**setup as &dyn std::any::Any)
                .downcast_ref::<super::TraceSetup>()
                .expect(text)
                .cfg;
            assert_eq!(
                (cfg.datadog, cfg.endpoint.as_str(), cfg.analytics_rate),
                (true, endpoint, rate),
                "{text}"
            );
        }
        // TestParseServiceEndpoint: the block's first bound address and its port
        let server = server_block("bind 127.0.0.1\ntrace").expect("bind");
        let local = Some("127.0.0.1:53".parse().expect("an address"));
        let tracer = super::tracer(server.setup("trace"), "dns://127.0.0.1:53", local).expect("tracer");
        assert_eq!(tracer.cfg.local, local);
    }
}
