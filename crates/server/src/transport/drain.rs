//! Graceful drain: the calls the endpoint is serving, counted so that a
//! stop can say what it waits for, and the log lines that tell how the
//! stop went.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How long [`HttpServer`](crate::http::HttpServer) lets the calls in flight
/// finish after its shutdown signal, by default: 30 s.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// The requests (not `subscriptions/listen` streams) being served right
/// now: counted from when the dispatcher gets one until its handler has
/// finished, whether its reply went out as JSON or as a stream.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallCounter(Arc<AtomicUsize>);

impl CallCounter {
    /// Counts one call until the guard is dropped.
    pub(crate) fn enter(&self) -> CallGuard {
        self.0.fetch_add(1, Ordering::Relaxed);
        CallGuard(Arc::clone(&self.0))
    }

    /// Calls in flight now.
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// One call in flight; dropping it ends the call's count.
#[derive(Debug)]
pub(crate) struct CallGuard(Arc<AtomicUsize>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What was open when a drain began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DrainStart {
    pub calls: usize,
    pub listens: usize,
    pub sessions: usize,
}

impl DrainStart {
    pub(crate) fn log(&self, transport: &str) {
        tracing::info!(
            transport,
            calls = self.calls,
            listen_streams = self.listens,
            sessions = self.sessions,
            "draining: {} in flight, {} listen stream{}, {} session{}",
            plural(self.calls, "call", "calls"),
            self.listens,
            if self.listens == 1 { "" } else { "s" },
            self.sessions,
            if self.sessions == 1 { "" } else { "s" },
        );
    }
}

/// Logs how a drain ended: every call finished after `elapsed`, or
/// `unfinished` calls were left when the deadline passed.
pub(crate) fn log_end(transport: &str, elapsed: Duration, unfinished: Option<usize>) {
    let secs = elapsed.as_secs_f64();
    match unfinished {
        None => tracing::info!(transport, elapsed_s = secs, "drained in {secs:.2} s"),
        Some(calls) => tracing::warn!(
            transport,
            elapsed_s = secs,
            unfinished = calls,
            "drain deadline passed with {} unfinished",
            plural(calls, "call", "calls")
        ),
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_follows_its_guards() {
        let calls = CallCounter::default();
        let first = calls.enter();
        let second = calls.enter();
        assert_eq!(calls.get(), 2);
        drop(first);
        assert_eq!(calls.get(), 1);
        drop(second);
        assert_eq!(calls.get(), 0);
    }

    #[test]
    fn counts_are_spelled_out() {
        assert_eq!(plural(1, "call", "calls"), "1 call");
        assert_eq!(plural(3, "call", "calls"), "3 calls");
    }
}
