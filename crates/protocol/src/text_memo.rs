//! Values decoded from JSON text and remembered, per thread, by that text.
//!
//! A client sends the same `clientCapabilities` and `clientInfo` with every
//! request. Each distinct text is decoded once per thread and then shared;
//! the next request with the same bytes gets the same value back after one
//! comparison. A value is a function of its text, so remembering it changes
//! no outcome, and a text that does not decode is never remembered.
//!
//! The texts are read from checked JSON (a `_meta`'s members), and only an
//! object's or an array's text is remembered: where the text being read
//! starts with one, the value there ends where the remembered text does (its
//! closing bracket ends it), so a known value is recognised without finding
//! its end first.

use std::cell::RefCell;
use std::sync::Arc;
use std::thread::LocalKey;

use serde::de::DeserializeOwned;

use crate::{ClientCapabilities, Implementation, checked_text};

/// Texts longer than this are decoded every time, so what a thread keeps
/// stays small whatever clients send.
const MAX_REMEMBERED_TEXT: usize = 1024;

/// Texts remembered per thread and type: a few clients' worth.
const ENTRIES: usize = 4;

/// The last few texts of one type seen on this thread, with their values.
struct TextMemo<T> {
    entries: Vec<(Box<str>, Arc<T>)>,
    /// The entry the next new text replaces, once all are in use.
    next: usize,
}

impl<T: DeserializeOwned> TextMemo<T> {
    const fn new() -> Self {
        TextMemo {
            entries: Vec::new(),
            next: 0,
        }
    }

    /// The value `rest` starts with, and the length of its text. `rest` is
    /// checked JSON text from a value's start onwards (see the module's
    /// notes).
    fn decode_start(&mut self, rest: &str) -> Result<(Arc<T>, usize), serde_json::Error> {
        let known = self
            .entries
            .iter()
            .find(|(seen, _)| rest.starts_with(&**seen));
        if let Some((seen, value)) = known {
            return Ok((Arc::clone(value), seen.len()));
        }
        let text = &rest[..checked_text::value_len(rest)];
        let value = Arc::new(serde_json::from_str::<T>(text)?);
        if text.len() <= MAX_REMEMBERED_TEXT && text.starts_with(['{', '[']) {
            self.remember(text, &value);
        }
        Ok((value, text.len()))
    }

    fn remember(&mut self, text: &str, value: &Arc<T>) {
        let entry = (Box::from(text), Arc::clone(value));
        if self.entries.len() < ENTRIES {
            self.entries.push(entry);
        } else {
            self.entries[self.next] = entry;
            self.next = (self.next + 1) % ENTRIES;
        }
    }
}

thread_local! {
    static CAPABILITIES: RefCell<TextMemo<ClientCapabilities>> = const { RefCell::new(TextMemo::new()) };
    static INFO: RefCell<TextMemo<Implementation>> = const { RefCell::new(TextMemo::new()) };
}

/// The client capabilities the checked JSON text `rest` starts with, and
/// the length of their text: shared with earlier requests that sent the
/// same text.
pub(crate) fn client_capabilities(
    rest: &str,
) -> Result<(Arc<ClientCapabilities>, usize), serde_json::Error> {
    decode_shared(&CAPABILITIES, rest)
}

/// The implementation info `rest` starts with, shared the same way.
pub(crate) fn client_info(rest: &str) -> Result<(Arc<Implementation>, usize), serde_json::Error> {
    decode_shared(&INFO, rest)
}

fn decode_shared<T: DeserializeOwned>(
    memo: &'static LocalKey<RefCell<TextMemo<T>>>,
    rest: &str,
) -> Result<(Arc<T>, usize), serde_json::Error> {
    memo.with(|memo| memo.borrow_mut().decode_start(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(rest: &str) -> (Arc<Implementation>, usize) {
        client_info(rest).unwrap()
    }

    #[test]
    fn the_same_text_gives_the_same_value_and_other_texts_their_own() {
        let text = r#"{"name":"c","version":"1"}"#;
        let (first, length) = info(text);
        assert_eq!(length, text.len());
        assert_eq!(*first, Implementation::new("c", "1"));
        // Known: recognised at the start of what follows, without reading on.
        let (again, length) = info(&format!("{text}, \"other\": [1]}}"));
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(length, text.len());
        let (other, _) = info(r#"{"name":"c","version":"2"}"#);
        assert_eq!(*other, Implementation::new("c", "2"));
        // Equal values from different texts are decoded apart.
        let spaced_text = r#"{"name": "c", "version": "1"}"#;
        let (spaced, length) = info(&format!("{spaced_text} }}"));
        assert!(!Arc::ptr_eq(&first, &spaced));
        assert_eq!((first, length), (spaced, spaced_text.len()));
    }

    #[test]
    fn a_text_that_does_not_decode_is_an_error_every_time() {
        for _ in 0..2 {
            let error = client_capabilities(r#"{"elicitation": 5}"#).unwrap_err();
            assert!(error.to_string().contains("invalid type"), "{error}");
        }
    }

    #[test]
    fn a_few_texts_are_kept_and_the_oldest_replaced() {
        let mut memo = TextMemo::<Vec<u32>>::new();
        let texts: Vec<String> = (0..=ENTRIES as u32).map(|n| format!("[{n}]")).collect();
        let first = memo.decode_start(&texts[0]).unwrap().0;
        for text in &texts[1..] {
            memo.decode_start(text).unwrap();
        }
        assert_eq!(memo.entries.len(), ENTRIES);
        // The first text was replaced by the last: decoded afresh.
        assert!(!Arc::ptr_eq(
            &first,
            &memo.decode_start(&texts[0]).unwrap().0
        ));
        let last = memo.decode_start(&texts[ENTRIES]).unwrap().0;
        assert!(Arc::ptr_eq(
            &last,
            &memo.decode_start(&texts[ENTRIES]).unwrap().0
        ));
    }

    #[test]
    fn long_texts_and_scalars_are_not_kept() {
        let mut memo = TextMemo::<Vec<String>>::new();
        let long = format!("[\"{}\"]", "x".repeat(MAX_REMEMBERED_TEXT));
        let (first, length) = memo.decode_start(&long).unwrap();
        assert_eq!(length, long.len());
        assert!(memo.entries.is_empty());
        assert!(!Arc::ptr_eq(&first, &memo.decode_start(&long).unwrap().0));
        // "1" must not be taken for the start of "12".
        let mut numbers = TextMemo::<u32>::new();
        assert_eq!(*numbers.decode_start("1").unwrap().0, 1);
        assert_eq!(*numbers.decode_start("12").unwrap().0, 12);
        assert!(numbers.entries.is_empty());
    }
}
