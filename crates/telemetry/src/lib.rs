//! OpenTelemetry for toolwire: one span and one duration measurement per
//! MCP request, named and attributed as the OpenTelemetry semantic
//! conventions for MCP say, with the W3C trace context carried in
//! `params._meta` (`traceparent`, `tracestate`) so that a trace runs from a
//! client through a gateway to the tool.
//!
//! Spans are `tracing` spans (target [`SPAN_TARGET`]) that the
//! `tracing-opentelemetry` layer turns into OpenTelemetry spans; the
//! histograms go to the global meter provider. Nothing is recorded until
//! [`enable`] is called (the `otlp` feature's [`otlp::init`] does), and
//! until then each request pays one relaxed atomic load.
//!
//! ```
//! use toolwire_telemetry::{Network, Operation, Outcome, Side};
//!
//! // What the server SDK does around each request (a no-op while disabled):
//! let operation = Operation::new(Side::Server, "tools/call")
//!     .target(Some("echo"))
//!     .request_id(Some("7".into()))
//!     .network(Network::Http11);
//! let started = operation.start(None);
//! started.finish(Outcome::Ok);
//! ```

mod operation;
#[cfg(feature = "otlp")]
pub mod otlp;
mod propagation;
pub mod semconv;
mod switch;

pub use operation::{
    Network, Operation, Outcome, Side, Started, detached_tool_span, record_session,
};
pub use propagation::TraceHeaders;
pub use switch::{enable, enabled};

/// The `tracing` target of every MCP span, for filters.
pub const SPAN_TARGET: &str = "toolwire::mcp";
