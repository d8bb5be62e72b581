//! The export pipeline for programs: spans and the duration histograms sent
//! with OTLP (HTTP/protobuf, HTTP/JSON or gRPC) wherever the standard
//! `OTEL_*` variables say.
//!
//! | variable | meaning |
//! |---|---|
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` (`_TRACES_`/`_METRICS_` variants) | the collector; default `http://localhost:4318` (HTTP) or `:4317` (gRPC) |
//! | `OTEL_EXPORTER_OTLP_PROTOCOL` (`_TRACES_`/`_METRICS_` variants) | `http/protobuf` (default), `http/json` or `grpc` |
//! | `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT` | as the OTLP exporter specification says |
//! | `OTEL_SERVICE_NAME` | the `service.name` resource attribute |
//! | `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG` | the sampler (default `parentbased_always_on`) |
//! | `OTEL_METRIC_EXPORT_INTERVAL` | how often metrics are sent (ms) |
//! | `OTEL_SDK_DISABLED=true` | nothing is set up, whatever else is set |
//!
//! ```no_run
//! use tracing_subscriber::prelude::*;
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Inside the tokio runtime: the exporters use it.
//! let telemetry = toolwire_telemetry::otlp::init("my-server")?;
//! tracing_subscriber::registry().with(telemetry.layer()).init();
//! // ... serve ...
//! telemetry.shutdown(); // sends what is still buffered
//! # Ok(()) }
//! ```

use std::env;
use std::fmt;
use std::time::Duration;

use opentelemetry::global;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{
    ExporterBuildError, MetricExporter, Protocol, SpanExporter, WithExportConfig, WithHttpConfig,
};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracerProvider, Tracer};
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

pub use http_client::RuntimeHttpClient;

/// True when the environment asks for export: an OTLP endpoint is set
/// (generic or per signal) and `OTEL_SDK_DISABLED` is not `true`.
pub fn requested_by_env() -> bool {
    !disabled_by_env()
        && [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        ]
        .iter()
        .any(|name| env::var_os(name).is_some_and(|v| !v.is_empty()))
}

/// True when `OTEL_SDK_DISABLED` is `true` (any case).
pub fn disabled_by_env() -> bool {
    env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Why the pipeline could not be set up.
#[derive(Debug)]
pub struct InitError(String);

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot set up OpenTelemetry export: {}", self.0)
    }
}

impl std::error::Error for InitError {}

impl From<ExporterBuildError> for InitError {
    fn from(error: ExporterBuildError) -> Self {
        InitError(error.to_string())
    }
}

/// The running pipeline: its providers, and the `tracing` layer that feeds
/// spans to it. Call [`Telemetry::shutdown`] (or drop it) before exiting so
/// that buffered spans are sent.
pub struct Telemetry {
    tracer: Tracer,
    tracers: SdkTracerProvider,
    meters: SdkMeterProvider,
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry").finish_non_exhaustive()
    }
}

/// Sets up OTLP export of spans and metrics as the `OTEL_*` variables say,
/// installs the meter provider globally and turns MCP telemetry on
/// ([`crate::enable`]). `service_name` is used when `OTEL_SERVICE_NAME` is
/// not set. Call it inside a tokio runtime.
pub fn init(service_name: &str) -> Result<Telemetry, InitError> {
    if disabled_by_env() {
        return Err(InitError("OTEL_SDK_DISABLED is true".to_owned()));
    }
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| InitError("not inside a tokio runtime".to_owned()))?;
    let client = RuntimeHttpClient::new(runtime);
    let resource = resource(service_name);
    let tracers = SdkTracerProvider::builder()
        .with_batch_exporter(span_exporter(&client)?)
        .with_resource(resource.clone())
        .build();
    let meters = SdkMeterProvider::builder()
        .with_periodic_exporter(metric_exporter(&client)?)
        .with_resource(resource)
        .build();
    global::set_meter_provider(meters.clone());
    global::set_text_map_propagator(TraceContextPropagator::new());
    crate::enable();
    Ok(Telemetry {
        tracer: tracers.tracer("toolwire"),
        tracers,
        meters,
    })
}

impl Telemetry {
    /// The `tracing` layer that turns spans into OpenTelemetry spans. It
    /// takes the MCP spans ([`crate::SPAN_TARGET`]) and whatever else is at
    /// `info` or above (a tool's own spans become children of its call).
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'span> LookupSpan<'span>,
    {
        let filter = Targets::new()
            .with_target(crate::SPAN_TARGET, LevelFilter::INFO)
            .with_default(LevelFilter::INFO);
        tracing_opentelemetry::layer()
            .with_tracer(self.tracer.clone())
            .with_filter(filter)
    }

    /// Sends what is buffered and stops the exporters.
    pub fn shutdown(self) {
        // Drop does it.
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Err(error) = self.tracers.shutdown() {
            eprintln!("toolwire: OpenTelemetry spans not all sent: {error}");
        }
        if let Err(error) = self.meters.shutdown() {
            eprintln!("toolwire: OpenTelemetry metrics not all sent: {error}");
        }
    }
}

fn resource(service_name: &str) -> Resource {
    let builder = Resource::builder();
    if env::var_os("OTEL_SERVICE_NAME").is_some_and(|v| !v.is_empty()) {
        builder.build()
    } else {
        builder.with_service_name(service_name.to_owned()).build()
    }
}

/// The protocol for one signal: its own variable, then the generic one,
/// then `http/protobuf` (the specification's default).
fn protocol(signal: &str) -> Result<Protocol, InitError> {
    let name = format!("OTEL_EXPORTER_OTLP_{signal}_PROTOCOL");
    let value = env::var(&name)
        .ok()
        .filter(|v| !v.is_empty())
        .or_else(|| env::var("OTEL_EXPORTER_OTLP_PROTOCOL").ok())
        .unwrap_or_default();
    match value.trim() {
        "" | "http/protobuf" => Ok(Protocol::HttpBinary),
        "http/json" => Ok(Protocol::HttpJson),
        "grpc" => Ok(Protocol::Grpc),
        other => Err(InitError(format!(
            "OTLP protocol {other:?} is not one of grpc, http/protobuf, http/json"
        ))),
    }
}

fn span_exporter(client: &RuntimeHttpClient) -> Result<SpanExporter, InitError> {
    let builder = SpanExporter::builder();
    Ok(match protocol("TRACES")? {
        Protocol::Grpc => builder.with_tonic().build()?,
        http => builder
            .with_http()
            .with_protocol(http)
            .with_http_client(client.clone())
            .build()?,
    })
}

fn metric_exporter(client: &RuntimeHttpClient) -> Result<MetricExporter, InitError> {
    let builder = MetricExporter::builder();
    Ok(match protocol("METRICS")? {
        Protocol::Grpc => builder.with_tonic().build()?,
        http => builder
            .with_http()
            .with_protocol(http)
            .with_http_client(client.clone())
            .build()?,
    })
}

/// How long one export may take when `OTEL_EXPORTER_OTLP_TIMEOUT` says
/// nothing (the specification's default).
const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

mod http_client {
    //! The exporters send from the SDK's own threads; this client runs each
    //! request on the program's tokio runtime (with the program's reqwest),
    //! so no second HTTP stack is built in.

    use bytes::Bytes;
    use http::{Request, Response};
    use opentelemetry_http::{HttpClient, HttpError};

    use super::DEFAULT_EXPORT_TIMEOUT;

    /// The OTLP/HTTP exporters' client: reqwest on a tokio runtime.
    #[derive(Debug, Clone)]
    pub struct RuntimeHttpClient {
        client: reqwest::Client,
        runtime: tokio::runtime::Handle,
    }

    /// A collector's answer larger than this is refused.
    const MAX_RESPONSE: usize = 4 * 1024 * 1024;

    impl RuntimeHttpClient {
        /// A client that sends on `runtime`.
        pub fn new(runtime: tokio::runtime::Handle) -> Self {
            let client = reqwest::Client::builder()
                .timeout(DEFAULT_EXPORT_TIMEOUT)
                .build()
                .unwrap_or_default();
            RuntimeHttpClient { client, runtime }
        }
    }

    #[async_trait::async_trait]
    impl HttpClient for RuntimeHttpClient {
        async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
            let request = reqwest::Request::try_from(request.map(reqwest::Body::from))?;
            let client = self.client.clone();
            let sent = self.runtime.spawn(async move {
                let response = client.execute(request).await?;
                let mut builder = Response::builder().status(response.status());
                for (name, value) in response.headers() {
                    builder = builder.header(name, value);
                }
                let body = response.bytes().await?;
                if body.len() > MAX_RESPONSE {
                    return Err(HttpError::from("the collector's response is over 4 MiB"));
                }
                Ok::<_, HttpError>(builder.body(body)?)
            });
            sent.await?
        }
    }
}
