//! Where the program's logs and telemetry go: log lines on stderr (stdout
//! carries results, or MCP messages under `serve --stdio`), and, when asked
//! for, OpenTelemetry spans and metrics over OTLP.

use toolwire_telemetry::otlp::{self, InitError, Telemetry};
use tracing_subscriber::prelude::*;
use tracing_subscriber::{EnvFilter, Layer, Registry};

use crate::LogFormat;
use crate::log_fields::PlainFields;
use crate::log_sink;
use crate::log_time::UtcMicros;
use crate::safe_json;

/// Sets up logging, and telemetry when `--otel` or the `OTEL_*` variables
/// ask for it (never under `OTEL_SDK_DISABLED=true`). `RUST_LOG` filters
/// the log lines; the default shows the server's info lines when serving
/// and only warnings otherwise; when serving, the lines are written in
/// batches (`log_sink`). Call it inside the tokio runtime; keep the
/// returned pipeline until the end (dropping it sends what is buffered).
pub(crate) fn init(
    serving: bool,
    format: LogFormat,
    otel: bool,
    service: &str,
) -> Result<Option<Telemetry>, InitError> {
    let wanted = (otel || otlp::requested_by_env()) && !otlp::disabled_by_env();
    if otel && otlp::disabled_by_env() {
        eprintln!("toolwire: --otel ignored: OTEL_SDK_DISABLED is true");
    }
    let telemetry = if wanted {
        Some(otlp::init(service)?)
    } else {
        None
    };
    let spans = telemetry.as_ref().map(|t| t.layer());
    if serving {
        log_sink::batch_stderr();
    }
    let _ = tracing_subscriber::registry()
        .with(log_lines(serving, format))
        .with(spans)
        .try_init();
    Ok(telemetry)
}

/// The log lines: text or JSON, on stderr, without the MCP spans (those
/// are for the telemetry pipeline; on a log line they would only repeat
/// what the audit line says).
fn log_lines(serving: bool, format: LogFormat) -> Box<dyn Layer<Registry> + Send + Sync> {
    let default = if serving { "info" } else { "warn" };
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(default))
        .add_directive(
            format!("{}=off", toolwire_telemetry::SPAN_TARGET)
                .parse()
                .expect("a valid directive"),
        );
    // No colours: every log line is passed through safe_text, which would
    // show the colour codes as escapes.
    match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(safe_json::SafeStderr::default())
            .with_ansi(false)
            .with_timer(UtcMicros)
            .fmt_fields(PlainFields)
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(safe_json::SafeJsonStderr::default())
            .with_ansi(false)
            .with_timer(UtcMicros)
            .with_filter(filter)
            .boxed(),
    }
}
