//! The stdio framing: one JSON-RPC message per line, as bytes.
//!
//! [`LineCodec`] splits a byte stream at `\n` (dropping a `\r` before it)
//! without requiring the line to be UTF-8, so a peer that writes a stray
//! invalid byte costs one line (answered with a parse error by whoever reads
//! it), never the connection. A line longer than the limit is reported once
//! as [`Line::TooLong`] and skipped up to its end.
//!
//! ```
//! use bytes::BytesMut;
//! use tokio_util::codec::Decoder;
//! use toolwire_protocol::lines::{Line, LineCodec};
//!
//! let mut codec = LineCodec::new(8);
//! let mut input = BytesMut::from(&b"{}\r\n\xff\xfe\n0123456789\nok"[..]);
//! let mut lines = Vec::new();
//! while let Some(line) = codec.decode(&mut input).unwrap() {
//!     lines.push(line);
//! }
//! lines.extend(codec.decode_eof(&mut input).unwrap());
//! assert_eq!(
//!     lines,
//!     [
//!         Line::Text("{}".into()),
//!         Line::Text(b"\xff\xfe"[..].into()),
//!         Line::TooLong,
//!         Line::Text("ok".into()),
//!     ]
//! );
//! ```

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::Decoder;

/// One frame read by [`LineCodec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A line's bytes, without its `\n` (or `\r\n`); not necessarily UTF-8.
    Text(Bytes),
    /// A line over the limit: its bytes are skipped up to the next `\n`.
    TooLong,
}

impl Line {
    /// Whether the line holds nothing but ASCII whitespace (such lines carry
    /// no message and are skipped).
    pub fn is_blank(&self) -> bool {
        matches!(self, Line::Text(bytes) if bytes.iter().all(u8::is_ascii_whitespace))
    }
}

/// A [`Decoder`] of newline-delimited lines of at most `max_length` bytes.
#[derive(Debug, Clone)]
pub struct LineCodec {
    max_length: usize,
    /// Where to resume the search for `\n` in the buffer.
    searched: usize,
    /// Inside an over-long line, skipping to its end.
    discarding: bool,
}

impl LineCodec {
    /// A codec for lines of at most `max_length` bytes (without the `\n`).
    pub fn new(max_length: usize) -> Self {
        LineCodec {
            max_length,
            searched: 0,
            discarding: false,
        }
    }
}

impl Decoder for LineCodec {
    type Item = Line;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Line>, std::io::Error> {
        loop {
            // Never look further than one byte past the limit.
            let horizon = buf.len().min(self.max_length.saturating_add(1));
            let found = memchr::memchr(b'\n', &buf[self.searched..horizon])
                .map(|offset| self.searched + offset);
            match (self.discarding, found) {
                (true, Some(end)) => {
                    buf.advance(end + 1);
                    self.searched = 0;
                    self.discarding = false;
                }
                (true, None) => {
                    buf.advance(horizon);
                    self.searched = 0;
                    if buf.is_empty() {
                        return Ok(None);
                    }
                }
                (false, Some(end)) => {
                    self.searched = 0;
                    let mut line = buf.split_to(end + 1);
                    line.truncate(end);
                    if line.last() == Some(&b'\r') {
                        line.truncate(end - 1);
                    }
                    return Ok(Some(Line::Text(line.freeze())));
                }
                (false, None) if buf.len() > self.max_length => {
                    self.discarding = true;
                    return Ok(Some(Line::TooLong));
                }
                (false, None) => {
                    self.searched = horizon;
                    return Ok(None);
                }
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Line>, std::io::Error> {
        if let Some(line) = self.decode(buf)? {
            return Ok(Some(line));
        }
        self.searched = 0;
        if self.discarding || buf.is_empty() {
            buf.clear();
            return Ok(None);
        }
        let mut line = buf.split();
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        Ok(Some(Line::Text(line.freeze())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(max: usize, chunks: &[&[u8]]) -> Vec<Line> {
        let mut codec = LineCodec::new(max);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            while let Some(line) = codec.decode(&mut buf).unwrap() {
                out.push(line);
            }
        }
        while let Some(line) = codec.decode_eof(&mut buf).unwrap() {
            out.push(line);
        }
        out
    }

    fn text(s: &[u8]) -> Line {
        Line::Text(Bytes::copy_from_slice(s))
    }

    #[test]
    fn lines_split_across_chunks_come_out_whole() {
        assert_eq!(
            frames(100, &[b"ab", b"c\r", b"\nde", b"f\n\n", b"g"]),
            [text(b"abc"), text(b"def"), text(b""), text(b"g")]
        );
    }

    #[test]
    fn a_line_of_exactly_the_limit_passes_and_one_more_byte_does_not() {
        assert_eq!(
            frames(3, &[b"abc\nabcd\nxy\n"]),
            [text(b"abc"), Line::TooLong, text(b"xy")]
        );
    }

    #[test]
    fn an_over_long_line_arriving_slowly_is_reported_once_and_skipped() {
        assert_eq!(
            frames(4, &[b"0123", b"4567", b"89", b"ab\nok\n"]),
            [Line::TooLong, text(b"ok")]
        );
    }

    #[test]
    fn invalid_utf8_is_kept_as_bytes() {
        assert_eq!(
            frames(10, &[b"\xc3\x28\n{}\n"]),
            [text(b"\xc3\x28"), text(b"{}")]
        );
    }

    #[test]
    fn an_over_long_unterminated_tail_yields_nothing_more() {
        assert_eq!(frames(2, &[b"abcdef"]), [Line::TooLong]);
    }

    #[test]
    fn blank_lines_are_recognised() {
        assert!(text(b" \t\r").is_blank());
        assert!(!text(b" x").is_blank());
        assert!(!Line::TooLong.is_blank());
    }
}
