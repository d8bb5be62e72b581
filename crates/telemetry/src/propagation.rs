//! The W3C trace context as it travels in `params._meta`.

use std::collections::HashMap;

use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::semconv::{TRACEPARENT, TRACESTATE};

/// The `traceparent` and `tracestate` of one request's `_meta`.
///
/// ```
/// use toolwire_telemetry::TraceHeaders;
/// let headers = TraceHeaders {
///     traceparent: "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01".into(),
///     tracestate: None,
/// };
/// assert!(headers.is_valid());
/// assert!(!TraceHeaders { traceparent: "nonsense".into(), tracestate: None }.is_valid());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceHeaders {
    /// `00-<trace id>-<span id>-<flags>`.
    pub traceparent: String,
    /// Vendor state, when there is any.
    pub tracestate: Option<String>,
}

impl TraceHeaders {
    /// The context of `span` (its OpenTelemetry span) as headers; `None`
    /// when it has no valid context (no OpenTelemetry layer, say).
    pub fn of(span: &tracing::Span) -> Option<TraceHeaders> {
        let context = span.context();
        if !context.span().span_context().is_valid() {
            return None;
        }
        let mut carrier = HashMap::new();
        TraceContextPropagator::new().inject_context(&context, &mut carrier);
        Some(TraceHeaders {
            traceparent: carrier.remove(TRACEPARENT)?,
            tracestate: carrier.remove(TRACESTATE).filter(|s| !s.is_empty()),
        })
    }

    /// The remote parent these headers name: an empty context when the
    /// `traceparent` does not parse (a peer's bad header starts a new
    /// trace, it never fails the request).
    pub fn remote_context(&self) -> Context {
        let mut carrier = HashMap::with_capacity(2);
        carrier.insert(TRACEPARENT.to_owned(), self.traceparent.clone());
        if let Some(state) = &self.tracestate {
            carrier.insert(TRACESTATE.to_owned(), state.clone());
        }
        TraceContextPropagator::new().extract(&carrier)
    }

    /// True when the `traceparent` parses.
    pub fn is_valid(&self) -> bool {
        self.remote_context().span().span_context().is_valid()
    }
}
