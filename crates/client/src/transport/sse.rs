//! A small incremental parser for `text/event-stream` bodies.
//!
//! Only what MCP needs: `data` fields are joined with newlines and each event's
//! data is handed out when a blank line ends the event; comments (`:` lines,
//! used as keep-alives) and `event` fields are ignored (every event is a
//! JSON-RPC message). The last `id` and `retry` seen are kept for resuming a
//! legacy (2025-11-25) stream. Lines may end in CRLF, LF or CR, and may be
//! split anywhere across chunks.

/// Parses SSE bytes into event payloads.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: Option<String>,
    after_cr: bool,
    max_event_bytes: usize,
    overflowed: bool,
    /// The last event id the stream sent (`id:` field), for `Last-Event-ID`.
    pub last_event_id: Option<String>,
    /// The reconnection delay the stream asked for (`retry:` field), in ms.
    pub retry_ms: Option<u64>,
}

/// An event larger than the parser's limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventTooLarge(pub usize);

impl SseParser {
    /// A parser that refuses events above `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        SseParser {
            max_event_bytes,
            ..Default::default()
        }
    }

    /// Feeds bytes; returns the payloads of the events they complete.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<String>, EventTooLarge> {
        let mut events = Vec::new();
        for &byte in chunk {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' => self.end_line(&mut events),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut events);
                }
                _ => self.line.push(byte),
            }
            if self.pending_bytes() > self.max_event_bytes {
                self.overflowed = true;
            }
            if self.overflowed {
                return Err(EventTooLarge(self.max_event_bytes));
            }
        }
        Ok(events)
    }

    /// Any event left unterminated when the stream ended (none if it is
    /// over the limit).
    pub fn finish(&mut self) -> Option<String> {
        if !self.line.is_empty() {
            let mut events = Vec::new();
            self.end_line(&mut events);
        }
        let data = self.data.take();
        data.filter(|_| !self.overflowed)
    }

    fn pending_bytes(&self) -> usize {
        self.line.len() + self.data.as_ref().map_or(0, String::len)
    }

    fn end_line(&mut self, events: &mut Vec<String>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                events.push(data);
            }
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (&line[..], &b""[..]),
        };
        if field == b"id" && !value.contains(&0) {
            self.last_event_id = Some(String::from_utf8_lossy(value).into_owned());
            return;
        }
        if field == b"retry" {
            if let Some(ms) = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()) {
                self.retry_ms = Some(ms);
            }
            return;
        }
        if field == b"data" {
            let value = String::from_utf8_lossy(value);
            match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(&value);
                }
                None => self.data = Some(value.into_owned()),
            }
            // Checked again here: the lossy conversion may have grown it.
            if self
                .data
                .as_ref()
                .is_some_and(|d| d.len() > self.max_event_bytes)
            {
                self.overflowed = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<String> {
        let mut parser = SseParser::new(1 << 20);
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend(parser.push(chunk).unwrap());
        }
        out.extend(parser.finish());
        out
    }

    #[test]
    fn events_are_split_by_blank_lines() {
        let events = parse_all(&[b"event: message\ndata: {\"a\":1}\n\ndata: {\"b\":2}\n\n"]);
        assert_eq!(events, [r#"{"a":1}"#, r#"{"b":2}"#]);
    }

    #[test]
    fn comments_and_other_fields_are_ignored() {
        let events = parse_all(&[b":\r\n: keep-alive\r\nid: 7\r\nretry: 10\r\ndata: x\r\n\r\n"]);
        assert_eq!(events, ["x"]);
    }

    #[test]
    fn the_last_id_and_retry_are_kept() {
        let mut parser = SseParser::new(1 << 20);
        let events = parser.push(b"id: event-1\nretry: 500\ndata: \n\n").unwrap();
        assert_eq!(events, [""]);
        assert_eq!(parser.last_event_id.as_deref(), Some("event-1"));
        assert_eq!(parser.retry_ms, Some(500));
        parser.push(b"retry: soon\nid: 2\n\n").unwrap();
        assert_eq!(
            (parser.last_event_id.as_deref(), parser.retry_ms),
            (Some("2"), Some(500))
        );
    }

    #[test]
    fn lines_split_across_chunks_and_crlf_split_across_chunks() {
        let events = parse_all(&[b"da", b"ta: he", b"llo\r", b"\n\r", b"\n"]);
        assert_eq!(events, ["hello"]);
    }

    #[test]
    fn bare_cr_ends_lines_and_multiple_data_lines_join_with_newline() {
        let events = parse_all(&[b"data: a\rdata:b\r\r"]);
        assert_eq!(events, ["a\nb"]);
    }

    #[test]
    fn an_unterminated_last_event_is_returned_by_finish() {
        let events = parse_all(&[b"data: tail"]);
        assert_eq!(events, ["tail"]);
    }

    #[test]
    fn an_event_over_the_limit_is_refused() {
        let mut parser = SseParser::new(8);
        assert_eq!(parser.push(b"data: 0123456789"), Err(EventTooLarge(8)));
    }

    #[test]
    fn invalid_utf8_that_grows_when_replaced_cannot_slip_past_the_limit() {
        // Eleven raw bytes pass the byte check; the data, as text, is 18
        // bytes, and an unterminated event is only converted by finish().
        let mut parser = SseParser::new(12);
        assert_eq!(parser.push(b"data:\xff\xff\xff\xff\xff\xff"), Ok(vec![]));
        assert_eq!(parser.finish(), None);
        let mut parser = SseParser::new(12);
        assert_eq!(
            parser.push(b"data:\xff\xff\xff\xff\xff\xff\n\n"),
            Err(EventTooLarge(12))
        );
    }
}
