//! Log lines on their way to stderr, written in batches while serving.
//!
//! A server that logs each call would otherwise make one `write(2)` per
//! call, a system call on every call's path. So `serve` and `gateway` gather their lines in memory and write them
//! out together, in the order they were logged, when the first of these
//! comes:
//!
//! - a runtime thread is about to wait for work (Tokio's `on_thread_park`,
//!   and [`HttpConfig::on_connection_thread_park`] for connection threads):
//!   an idle server has written every line;
//! - a warning or an error is logged: it goes out at once, after the lines
//!   before it;
//! - the batch reaches [`MAX_BATCH_BYTES`], or its oldest line is
//!   [`MAX_BATCH_AGE`] old when another comes;
//! - the program ends, or panics (before the panic's message).
//!
//! A process killed outright (SIGKILL) loses the lines of its last batch.
//! The other commands write each line at once.
//!
//! [`HttpConfig::on_connection_thread_park`]: toolwire_server::http::HttpConfig::on_connection_thread_park

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// A batch this large is written without waiting for an idle thread.
pub(crate) const MAX_BATCH_BYTES: usize = 32 * 1024;

/// A batch whose oldest line is this old is written with the next line.
pub(crate) const MAX_BATCH_AGE: Duration = Duration::from_millis(100);

/// Lines waiting to be written to `out`, and when the oldest was added.
pub(crate) struct Batches<W> {
    state: Mutex<Batch<W>>,
    max_bytes: usize,
    max_age: Duration,
}

struct Batch<W> {
    out: W,
    lines: Vec<u8>,
    oldest: Option<Instant>,
}

impl<W: Write> Batches<W> {
    pub(crate) const fn new(out: W, max_bytes: usize, max_age: Duration) -> Batches<W> {
        Batches {
            state: Mutex::new(Batch {
                out,
                lines: Vec::new(),
                oldest: None,
            }),
            max_bytes,
            max_age,
        }
    }

    /// Adds `line`; writes the batch now when `urgent` (a warning or an
    /// error) or when it has grown too large or too old.
    pub(crate) fn add(&self, line: &[u8], urgent: bool) -> io::Result<()> {
        let mut batch = lock(&self.state);
        let now = Instant::now();
        let oldest = *batch.oldest.get_or_insert(now);
        batch.lines.extend_from_slice(line);
        if urgent
            || batch.lines.len() >= self.max_bytes
            || now.duration_since(oldest) >= self.max_age
        {
            return batch.write_out();
        }
        Ok(())
    }

    /// Writes every line waiting.
    pub(crate) fn flush(&self) -> io::Result<()> {
        lock(&self.state).write_out()
    }

    /// [`Batches::flush`], unless another thread is writing (or this one
    /// panicked while it held the batch): for a panic hook, which must not
    /// wait.
    pub(crate) fn try_flush(&self) {
        let mut batch = match self.state.try_lock() {
            Ok(batch) => batch,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        let _ = batch.write_out();
    }
}

impl<W: Write> Batch<W> {
    fn write_out(&mut self) -> io::Result<()> {
        self.oldest = None;
        if self.lines.is_empty() {
            return Ok(());
        }
        let written = self
            .out
            .write_all(&self.lines)
            .and_then(|()| self.out.flush());
        // Written or not, the lines go: a stderr that fails once would
        // otherwise grow the batch for ever.
        self.lines.clear();
        if self.lines.capacity() > 4 * MAX_BATCH_BYTES {
            self.lines.shrink_to(MAX_BATCH_BYTES);
        }
        written
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether stderr's lines are batched (set once, by [`batch_stderr`]).
static BATCHING: AtomicBool = AtomicBool::new(false);

static STDERR: Batches<StderrOut> = Batches::new(StderrOut, MAX_BATCH_BYTES, MAX_BATCH_AGE);

/// The process's stderr, as a value a `static` can hold.
struct StderrOut;

impl Write for StderrOut {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        io::stderr().write(bytes)
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        io::stderr().lock().write_all(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

/// From now on stderr's log lines are gathered and written in batches;
/// a panic writes the waiting lines before its message.
pub(crate) fn batch_stderr() {
    if BATCHING.swap(true, Ordering::SeqCst) {
        return;
    }
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        STDERR.try_flush();
        default(info);
    }));
}

/// Writes `line` to stderr: at once, or into the batch when batching
/// (written at once with the lines before it when `urgent`).
pub(crate) fn write_stderr(line: &[u8], urgent: bool) -> io::Result<()> {
    if BATCHING.load(Ordering::Relaxed) {
        STDERR.add(line, urgent)
    } else {
        io::stderr().lock().write_all(line)
    }
}

/// Writes the lines waiting, if any: the runtime threads' park hook, and
/// what the program runs before it ends.
pub(crate) fn flush_stderr() {
    if BATCHING.load(Ordering::Relaxed) {
        let _ = STDERR.flush();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// What was written, one entry per `write_all`.
    #[derive(Clone, Default)]
    struct Written(Arc<Mutex<Vec<String>>>);

    impl Written {
        fn writes(&self) -> Vec<String> {
            self.0.lock().unwrap().clone()
        }
    }

    impl Write for Written {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.write_all(bytes)?;
            Ok(bytes.len())
        }

        fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
            let text = String::from_utf8(bytes.to_vec()).unwrap();
            self.0.lock().unwrap().push(text);
            Ok(())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn batches(max_bytes: usize, max_age: Duration) -> (Batches<Written>, Written) {
        let written = Written::default();
        (Batches::new(written.clone(), max_bytes, max_age), written)
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn lines_wait_for_a_flush_and_go_out_together_in_order() {
        let (batches, written) = batches(1024, HOUR);
        batches.add(b"one\n", false).unwrap();
        batches.add(b"two\n", false).unwrap();
        assert_eq!(written.writes(), Vec::<String>::new());
        batches.flush().unwrap();
        assert_eq!(written.writes(), ["one\ntwo\n"]);
        batches.flush().unwrap();
        assert_eq!(
            written.writes(),
            ["one\ntwo\n"],
            "an empty batch writes nothing"
        );
    }

    #[test]
    fn an_urgent_line_goes_out_at_once_after_the_lines_before_it() {
        let (batches, written) = batches(1024, HOUR);
        batches.add(b"info\n", false).unwrap();
        batches.add(b"WARN\n", true).unwrap();
        batches.add(b"later\n", false).unwrap();
        assert_eq!(written.writes(), ["info\nWARN\n"]);
        batches.try_flush();
        assert_eq!(written.writes(), ["info\nWARN\n", "later\n"]);
    }

    #[test]
    fn a_full_batch_goes_out_without_a_flush() {
        let (batches, written) = batches(10, HOUR);
        batches.add(b"12345\n", false).unwrap();
        assert_eq!(written.writes(), Vec::<String>::new());
        batches.add(b"6789\n", false).unwrap();
        assert_eq!(written.writes(), ["12345\n6789\n"]);
    }

    #[test]
    fn an_old_batch_goes_out_with_the_next_line() {
        let (batches, written) = batches(1024, Duration::from_millis(30));
        batches.add(b"first\n", false).unwrap();
        std::thread::sleep(Duration::from_millis(40));
        batches.add(b"second\n", false).unwrap();
        assert_eq!(written.writes(), ["first\nsecond\n"]);
        // The age counts from the oldest line of the new batch.
        batches.add(b"third\n", false).unwrap();
        assert_eq!(written.writes(), ["first\nsecond\n"]);
    }

    /// A stderr that refuses every write.
    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::new(io::ErrorKind::BrokenPipe, "stderr is gone"))
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_write_is_reported_and_its_lines_dropped() {
        let batches = Batches::new(Broken, 1024, HOUR);
        batches.add(b"lost\n", false).unwrap();
        let error = batches.flush().unwrap_err();
        assert_eq!(error.to_string(), "stderr is gone");
        assert!(lock(&batches.state).lines.is_empty());
        batches.flush().unwrap();
    }
}
