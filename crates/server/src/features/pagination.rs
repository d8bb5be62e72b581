//! Stateless cursors: any instance can continue any cursor. A cursor names
//! the sequence number of the last entry sent (entries are numbered as they
//! are registered), so a walk goes on after it whatever was added, removed,
//! enabled or disabled meanwhile: every entry present for the whole walk is
//! listed exactly once.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use toolwire_protocol::ErrorObject;

use crate::features::registry::Slot;

const PREFIX: &str = "tw2:";

/// Encodes "continue after the entry numbered `after`".
pub(crate) fn encode_cursor(after: u64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{PREFIX}{after}"))
}

/// Decodes a cursor made by [`encode_cursor`]; anything else is -32602.
pub(crate) fn decode_cursor(cursor: &str) -> Result<u64, ErrorObject> {
    let invalid = || ErrorObject::invalid_params(format!("Invalid cursor: {cursor:?}"));
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let text = std::str::from_utf8(&bytes).map_err(|_| invalid())?;
    let digits = text.strip_prefix(PREFIX).ok_or_else(invalid)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    digits.parse().map_err(|_| invalid())
}

/// One page of the `visible` slots (in number order, from where the page
/// starts): at most `size` entries, and the cursor of the next page when
/// another visible entry follows. Only the page and one entry after it are
/// looked at.
pub(crate) fn page<'a, T: 'a>(
    mut visible: impl Iterator<Item = &'a Slot<T>>,
    size: usize,
) -> (Vec<Arc<T>>, Option<String>) {
    let size = size.max(1);
    let mut page = Vec::with_capacity(size.min(256));
    let mut last = None;
    for slot in visible.by_ref().take(size) {
        page.push(Arc::clone(&slot.item));
        last = Some(slot.seq);
    }
    let next = match (last, visible.next()) {
        (Some(last), Some(_)) => Some(encode_cursor(last)),
        _ => None,
    };
    (page, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries numbered `seqs` (each one's value is its number).
    fn numbered(seqs: &[u64]) -> Vec<Slot<u64>> {
        seqs.iter()
            .map(|s| Slot {
                item: Arc::new(*s),
                enabled: true,
                seq: *s,
            })
            .collect()
    }

    /// The page after `after` (as the list does with a snapshot).
    fn page_of(slots: &[Slot<u64>], after: Option<u64>, size: usize) -> (Vec<u64>, Option<String>) {
        let start = after.map_or(0, |after| slots.partition_point(|s| s.seq <= after));
        let (page, next) = page(slots[start..].iter().filter(|s| s.enabled), size);
        (page.into_iter().map(|item| *item).collect(), next)
    }

    #[test]
    fn cursor_round_trips() {
        assert_eq!(decode_cursor(&encode_cursor(42)).unwrap(), 42);
    }

    #[test]
    fn garbage_cursor_is_invalid_params() {
        let plus = URL_SAFE_NO_PAD.encode("tw2:+5");
        let old = URL_SAFE_NO_PAD.encode("tw1:5");
        for bad in ["", "!!", "dHcxOng", "aGVsbG8", &plus, &old] {
            let err = decode_cursor(bad).unwrap_err();
            assert_eq!(err.code, -32602, "{bad}");
            assert_eq!(err.message, format!("Invalid cursor: {bad:?}"));
        }
    }

    #[test]
    fn pages_cover_everything_once() {
        let items = numbered(&[0, 1, 2, 3, 4]);
        let (first, next) = page_of(&items, None, 2);
        assert_eq!(first, vec![0, 1]);
        let (second, next) = page_of(&items, Some(decode_cursor(&next.unwrap()).unwrap()), 2);
        assert_eq!(second, vec![2, 3]);
        let (last, next) = page_of(&items, Some(decode_cursor(&next.unwrap()).unwrap()), 2);
        assert_eq!((last, next), (vec![4], None));
    }

    #[test]
    fn a_full_last_page_has_no_next_cursor() {
        let items = numbered(&[0, 1, 2, 3]);
        let (first, next) = page_of(&items, None, 2);
        let (last, next) = page_of(&items, Some(decode_cursor(&next.unwrap()).unwrap()), 2);
        assert_eq!((first, last, next), (vec![0, 1], vec![2, 3], None));
    }

    #[test]
    fn a_walk_goes_on_after_the_last_entry_sent_whatever_changed() {
        let (first, next) = page_of(&numbered(&[0, 1, 2]), None, 1);
        assert_eq!(first, vec![0]);
        let after = decode_cursor(&next.unwrap()).unwrap();
        // 0 removed: 1 is next all the same.
        assert_eq!(page_of(&numbered(&[1, 2]), Some(after), 1).0, vec![1]);
        // The last one sent is gone and a later one too: 2 is next.
        assert_eq!(page_of(&numbered(&[2, 7]), Some(after), 1).0, vec![2]);
    }
}
