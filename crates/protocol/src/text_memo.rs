//! Values decoded from JSON text and remembered, per thread, by that text.
//!
//! A client sends the same `clientCapabilities` and `clientInfo` with every
//! request. Each distinct text is decoded once per thread and then shared;
//! the next request with the same bytes gets the same value back after one
//! comparison. A value is a function of its text, so remembering it changes
//! no outcome, and a text that does not decode is never remembered.

use std::cell::RefCell;
use std::sync::Arc;
use std::thread::LocalKey;

use serde::de::DeserializeOwned;

use crate::{ClientCapabilities, Implementation};

/// Texts longer than this are decoded every time, so what a thread keeps
/// stays small whatever clients send.
const MAX_REMEMBERED_TEXT: usize = 1024;

/// Texts remembered per thread and type: a few clients' worth.
const ENTRIES: usize = 4;

/// The last few texts of one type seen on this thread, with their values.
pub(crate) struct TextMemo<T> {
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

    fn decode(&mut self, text: &str) -> Result<Arc<T>, serde_json::Error> {
        if let Some((_, value)) = self.entries.iter().find(|(seen, _)| **seen == *text) {
            return Ok(Arc::clone(value));
        }
        let value = Arc::new(serde_json::from_str::<T>(text)?);
        if text.len() <= MAX_REMEMBERED_TEXT {
            self.remember(text, &value);
        }
        Ok(value)
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

/// `text` decoded as client capabilities, shared with earlier requests that
/// sent the same text.
pub(crate) fn client_capabilities(
    text: &str,
) -> Result<Arc<ClientCapabilities>, serde_json::Error> {
    decode_shared(&CAPABILITIES, text)
}

/// `text` decoded as an implementation's info, shared the same way.
pub(crate) fn client_info(text: &str) -> Result<Arc<Implementation>, serde_json::Error> {
    decode_shared(&INFO, text)
}

fn decode_shared<T: DeserializeOwned>(
    memo: &'static LocalKey<RefCell<TextMemo<T>>>,
    text: &str,
) -> Result<Arc<T>, serde_json::Error> {
    memo.with(|memo| memo.borrow_mut().decode(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_text_gives_the_same_value_and_other_texts_their_own() {
        let text = r#"{"name":"c","version":"1"}"#;
        let first = client_info(text).unwrap();
        let again = client_info(text).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(*first, Implementation::new("c", "1"));
        let other = client_info(r#"{"name":"c","version":"2"}"#).unwrap();
        assert_eq!(*other, Implementation::new("c", "2"));
        // Equal values from different texts are decoded apart.
        let spaced = client_info(r#"{"name": "c", "version": "1"}"#).unwrap();
        assert!(!Arc::ptr_eq(&first, &spaced));
        assert_eq!(first, spaced);
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
        let mut memo = TextMemo::<u32>::new();
        let texts: Vec<String> = (0..=ENTRIES as u32).map(|n| n.to_string()).collect();
        let first = memo.decode(&texts[0]).unwrap();
        for text in &texts[1..] {
            memo.decode(text).unwrap();
        }
        assert_eq!(memo.entries.len(), ENTRIES);
        // The first text was replaced by the last: decoded afresh.
        assert!(!Arc::ptr_eq(&first, &memo.decode(&texts[0]).unwrap()));
        let last = memo.decode(&texts[ENTRIES]).unwrap();
        assert!(Arc::ptr_eq(&last, &memo.decode(&texts[ENTRIES]).unwrap()));
    }

    #[test]
    fn long_texts_are_not_kept() {
        let mut memo = TextMemo::<String>::new();
        let long = format!("\"{}\"", "x".repeat(MAX_REMEMBERED_TEXT));
        let first = memo.decode(&long).unwrap();
        assert!(memo.entries.is_empty());
        assert!(!Arc::ptr_eq(&first, &memo.decode(&long).unwrap()));
    }
}
