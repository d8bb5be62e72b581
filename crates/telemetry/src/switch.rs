//! The one switch: telemetry is off until a program turns it on.

use std::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns MCP spans and metrics on for this process. [`crate::otlp::init`]
/// calls it; a program that installs its own `tracing-opentelemetry` layer
/// and meter provider calls it itself.
///
/// ```
/// toolwire_telemetry::enable();
/// assert!(toolwire_telemetry::enabled());
/// ```
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// True once [`enable`] was called.
#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}
