//! The fields of a text log line, written exactly as tracing-subscriber's
//! `DefaultFields` writes them without colours, in fewer steps.
//!
//! `DefaultVisitor` writes every `name=value` field through `nu_ansi_term`,
//! painting the name and the `=` even when colours are off: about 600
//! instructions a field, a third of the cost of the audit line that
//! `toolwire serve` and `toolwire gateway` log for every call. Here a plain
//! field is written directly; messages, errors, `r#` names and `log.` fields
//! (and everything, should colours be on) still go to `DefaultVisitor`.

use std::error::Error;
use std::fmt;

use tracing::field::{Field, Visit};
use tracing_subscriber::field::{MakeVisitor, VisitFmt, VisitOutput};
use tracing_subscriber::fmt::format::{DefaultVisitor, Writer};

/// `DefaultFields`' output, byte for byte, for a fmt layer.
///
/// ```ignore
/// tracing_subscriber::fmt::layer().with_ansi(false).fmt_fields(PlainFields)
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PlainFields;

impl<'a> MakeVisitor<Writer<'a>> for PlainFields {
    type Visitor = PlainVisitor<'a>;

    fn make_visitor(&self, target: Writer<'a>) -> PlainVisitor<'a> {
        PlainVisitor {
            writer: target,
            is_empty: true,
            result: Ok(()),
        }
    }
}

/// Writes one event's or span's fields; see [`PlainFields`].
pub(crate) struct PlainVisitor<'a> {
    writer: Writer<'a>,
    /// Nothing written yet: the next field needs no separating space.
    is_empty: bool,
    result: fmt::Result,
}

impl PlainVisitor<'_> {
    /// Whether `name`'s field is written here rather than by `DefaultVisitor`.
    fn is_plain(&self, name: &str) -> bool {
        !self.writer.has_ansi_escapes()
            && name != "message"
            && !name.starts_with("r#")
            && !name.starts_with("log.")
    }

    /// ` name=value`, the space only between fields.
    fn write_plain(&mut self, name: &str, value: &dyn fmt::Debug) {
        if self.result.is_err() {
            return;
        }
        let separator = if self.is_empty { "" } else { " " };
        self.is_empty = false;
        self.result = write_field(&mut self.writer, separator, name, value);
    }

    /// Hands the field to `DefaultVisitor`, where it is written as before.
    fn delegate(&mut self, field: &Field, record: impl FnOnce(&mut DefaultVisitor<'_>)) {
        if self.result.is_err() {
            return;
        }
        let mut inner = DefaultVisitor::new(self.writer.by_ref(), self.is_empty);
        record(&mut inner);
        self.result = inner.finish();
        // `DefaultVisitor` writes nothing for a `log.` field (the metadata
        // of a `log` record, already on the line).
        if !field.name().starts_with("log.") {
            self.is_empty = false;
        }
    }
}

fn write_field(
    writer: &mut Writer<'_>,
    separator: &str,
    name: &str,
    value: &dyn fmt::Debug,
) -> fmt::Result {
    writer.write_str(separator)?;
    writer.write_str(name)?;
    writer.write_char('=')?;
    write!(writer, "{value:?}")
}

impl Visit for PlainVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if self.is_plain(field.name()) {
            self.write_plain(field.name(), &value);
        } else {
            self.delegate(field, |inner| inner.record_str(field, value));
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn Error + 'static)) {
        self.delegate(field, |inner| inner.record_error(field, value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.is_plain(field.name()) {
            self.write_plain(field.name(), value);
        } else {
            self.delegate(field, |inner| inner.record_debug(field, value));
        }
    }
}

impl VisitOutput<fmt::Result> for PlainVisitor<'_> {
    fn finish(self) -> fmt::Result {
        self.result
    }
}

impl VisitFmt for PlainVisitor<'_> {
    fn writer(&mut self) -> &mut dyn fmt::Write {
        &mut self.writer
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::fmt::MakeWriter;
    use tracing_subscriber::fmt::format::DefaultFields;
    use tracing_subscriber::prelude::*;

    use super::*;

    /// Collects what a fmt layer writes.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;

        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    #[derive(Debug)]
    struct Failed(Option<Box<Failed>>);

    impl fmt::Display for Failed {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(if self.0.is_some() { "outer" } else { "inner" })
        }
    }

    impl Error for Failed {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.0.as_deref().map(|e| e as &(dyn Error + 'static))
        }
    }

    /// Events and a span with every kind of field.
    fn log_everything() {
        let span = tracing::info_span!("call", tool = "echo", id = 7);
        let _entered = span.enter();
        tracing::info!(
            target: "toolwire::audit",
            event = "tool_call",
            principal = ?"<anon\"ymous>\n",
            tool = "echo",
            upstream = "<anon\"ymous>\\\n",
            title = "café ✓ \u{202e}",
            arguments_sha256 = %"37fd1c",
            duration_ms = 2_u64,
            delta = -3_i64,
            ok = true,
            ratio = 0.5_f64,
            sanitized = %"none",
        );
        tracing::warn!(r#type = "kind", "a message with \u{1b}[31m an escape");
        let error = Failed(Some(Box::new(Failed(None))));
        tracing::error!(error = &error as &(dyn Error + 'static), "failed");
        tracing::info!(log.target = "old", after = 1);
        tracing::info!("only a message");
    }

    fn lines_with(
        fields: impl for<'w> tracing_subscriber::fmt::FormatFields<'w> + Send + Sync + 'static,
    ) -> String {
        let out = Captured::default();
        let layer = tracing_subscriber::fmt::layer()
            .without_time()
            .with_ansi(false)
            .with_writer(out.clone())
            .fmt_fields(fields);
        tracing::subscriber::with_default(
            tracing_subscriber::registry().with(layer),
            log_everything,
        );
        let bytes = out.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn lines_are_those_of_default_fields_byte_for_byte() {
        let plain = lines_with(PlainFields);
        assert_eq!(plain, lines_with(DefaultFields::new()));
        assert_eq!(plain.lines().count(), 5, "{plain}");
        assert!(
            plain.contains(
                "call{tool=\"echo\" id=7}: toolwire::audit: event=\"tool_call\" \
                 principal=\"<anon\\\"ymous>\\n\" tool=\"echo\" \
                 upstream=\"<anon\\\"ymous>\\\\\\n\" title=\"café ✓ \\u{202e}\" \
                 arguments_sha256=37fd1c duration_ms=2 \
                 delta=-3 ok=true ratio=0.5 sanitized=none\n"
            ),
            "{plain}"
        );
    }
}
