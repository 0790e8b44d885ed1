//! `trace [ENDPOINT-TYPE] [ENDPOINT] { every N; service NAME;
//! client_server [BOOL]; datadog_analytics_rate RATE;
//! zipkin_max_backlog_size N; zipkin_max_batch_size N;
//! zipkin_max_batch_interval DURATION }`, as CoreDNS reads it.
//! ENDPOINT-TYPE is `zipkin` (the default) or `datadog`. A zipkin
//! ENDPOINT defaults to `localhost:9411`; one without `http` becomes
//! `http://ENDPOINT/api/v2/spans`. Only `http://` URLs are sent to. A
//! datadog ENDPOINT is the agent's `HOST[:PORT]` (`localhost:8126` when
//! none; port 8126 when it names none), sent to at `/v0.3/traces`.

use std::any::Any;
use std::net::SocketAddr;
use std::sync::Arc;

use super::config::{Kind, TraceConfig};
use super::counters::Counters;
use super::datadog;
use super::tracer::Tracer;
use crate::corefile::args::Args;
use crate::corefile::blocks::Directive;
use crate::corefile::options::{self, Opt};
use crate::corefile::problem::ConfigError;
use crate::corefile::words::{duration, Block};
use crate::query::plugins::chain::Setup;

/// Directives after `trace` that CoreDNS does not put in a query's chain
/// (they serve elsewhere, or only at startup): no span.
const NO_HANDLER: &[&str] = &["ready", "health", "pprof", "tls", "on", "sign"];

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
        c.analytics_rate = match a.args.first() {
            None => 0.0,
            Some(_) => a.parse(0, "a number", errors).unwrap_or(c.analytics_rate),
        };
        if !(0.0..=1.0).contains(&c.analytics_rate) {
            let message = format!(
                "trace: datadog analytics rate must be between 0 and 1, '{}' is not supported",
                c.analytics_rate
            );
            errors.push(ConfigError::new(&a.name.pos, message));
        }
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
                cfg.kind = Kind::Datadog;
                cfg.endpoint = datadog::url(endpoint.unwrap_or(datadog::DEFAULT));
            }
            other => {
                let message = format!("trace: tracing endpoint type '{other}' is not supported (zipkin, datadog)");
                errors.push(ConfigError::new(at, message));
            }
        }
        if !cfg.endpoint.starts_with("http://") {
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
/// first bound address and its port, as CoreDNS's service endpoint),
/// `plugins` the block's in run order (those after `trace` are the spans
/// a query passes); starts the reporter (call inside the runtime).
pub fn tracer(
    setup: Option<&Arc<dyn Setup>>,
    server: &str,
    local: Option<SocketAddr>,
    plugins: &[&'static str],
) -> Option<Arc<Tracer>> {
    let setup = setup.and_then(|s| (&**s as &dyn Any).downcast_ref::<TraceSetup>())?;
    let after = plugins.iter().position(|p| *p == "trace").map_or(0, |i| i + 1);
    let handlers = plugins[after..].iter().filter(|p| !NO_HANDLER.contains(p));
    let cfg = TraceConfig {
        local,
        passes: handlers.copied().collect(),
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
        ];
        let head = match c.kind {
            Kind::Zipkin => format!("trace zipkin {}", c.endpoint),
            Kind::Datadog => {
                options.push(format!("datadog_analytics_rate {}", c.analytics_rate));
                let agent = c.endpoint.strip_suffix(datadog::PATH).unwrap_or(&c.endpoint);
                format!("trace datadog {agent}")
            }
        };
        options.extend([
            format!("zipkin_max_backlog_size {}", c.backlog),
            format!("zipkin_max_batch_size {}", c.batch_size),
            format!("zipkin_max_batch_interval {}", duration(c.batch_interval)),
        ]);
        b.directive(head, &options);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::config::tests::server_block;

    /// The trace configuration `text` (one server block's body) sets up.
    fn config(text: &str) -> std::sync::Arc<super::TraceConfig> {
        let server = server_block(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        let setup = server.setup("trace").expect(text);
        (&**setup as &dyn std::any::Any)
            .downcast_ref::<super::TraceSetup>()
            .expect(text)
            .cfg
            .clone()
    }

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
            let cfg = &config(text);
            assert_eq!(cfg.endpoint, endpoint, "{text}");
            assert_eq!(
                (cfg.every, cfg.service.as_str(), cfg.client_server),
                (every, service, client_server),
                "{text}"
            );
            assert_eq!((cfg.backlog, cfg.batch_size), (backlog, batch), "{text}");
            assert_eq!(cfg.batch_interval, Duration::from_secs(secs), "{text}");
        }
        // TestParseServiceEndpoint: the block's first bound address and its port
        let server = server_block("bind 127.0.0.1\ntrace").expect("bind");
        let local = Some("127.0.0.1:53".parse().expect("an address"));
        let tracer = super::tracer(server.setup("trace"), "dns://127.0.0.1:53", local, &[]).expect("tracer");
        assert_eq!(tracer.cfg.local, local);
    }

    /// TestTraceParse's datadog rows: the agent's URL and the analytics rate.
    #[test]
    fn datadog_rows_as_coredns_reads_them() {
        for (text, endpoint, rate) in [
            ("trace datadog localhost", "http://localhost:8126/v0.3/traces", 0.0),
            (
                "trace datadog http://localhost:8127",
                "http://localhost:8127/v0.3/traces",
                0.0,
            ),
            (
                "trace datadog localhost {\n datadog_analytics_rate 0.1\n}",
                "http://localhost:8126/v0.3/traces",
                0.1,
            ),
        ] {
            let cfg = &config(text);
            assert_eq!(cfg.kind, super::Kind::Datadog, "{text}");
            assert_eq!((cfg.endpoint.as_str(), cfg.analytics_rate), (endpoint, rate), "{text}");
        }
    }
}
