//! Stateless cursors: any instance can continue any cursor. A cursor names
//! the sequence number of the last entry sent (entries are numbered as they
//! are registered), so a walk goes on after it whatever was added, removed,
//! enabled or disabled meanwhile: every entry present for the whole walk is
//! listed exactly once.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use toolwire_protocol::ErrorObject;

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

/// One page of `items` (numbered, in number order) after `after` (from the
/// start when `None`), and the cursor of the next page.
pub(crate) fn page<T: Clone>(
    items: &[(u64, T)],
    after: Option<u64>,
    size: usize,
) -> (Vec<T>, Option<String>) {
    let start = match after {
        Some(after) => items.partition_point(|(seq, _)| *seq <= after),
        None => 0,
    };
    let end = start.saturating_add(size.max(1)).min(items.len());
    let next = (end < items.len()).then(|| encode_cursor(items[end - 1].0));
    let page = items[start..end]
        .iter()
        .map(|(_, item)| item.clone())
        .collect();
    (page, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(seqs: &[u64]) -> Vec<(u64, u64)> {
        seqs.iter().map(|s| (*s, *s)).collect()
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
        let (first, next) = page(&items, None, 2);
        assert_eq!(first, vec![0, 1]);
        let (second, next) = page(&items, Some(decode_cursor(&next.unwrap()).unwrap()), 2);
        assert_eq!(second, vec![2, 3]);
        let (last, next) = page(&items, Some(decode_cursor(&next.unwrap()).unwrap()), 2);
        assert_eq!((last, next), (vec![4], None));
    }

    #[test]
    fn a_walk_goes_on_after_the_last_entry_sent_whatever_changed() {
        let (first, next) = page(&numbered(&[0, 1, 2]), None, 1);
        assert_eq!(first, vec![0]);
        let after = decode_cursor(&next.unwrap()).unwrap();
        // 0 removed: 1 is next all the same.
        assert_eq!(page(&numbered(&[1, 2]), Some(after), 1).0, vec![1]);
        // The last one sent is gone and a later one too: 2 is next.
        assert_eq!(page(&numbered(&[2, 7]), Some(after), 1).0, vec![2]);
    }
}
