//! Stateless cursors: any instance can continue any cursor.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use toolwire_protocol::ErrorObject;

const PREFIX: &str = "tw1:";

/// Encodes the position of the next page.
pub(crate) fn encode_cursor(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("{PREFIX}{offset}"))
}

/// Decodes a cursor made by [`encode_cursor`]; anything else is -32602.
pub(crate) fn decode_cursor(cursor: &str) -> Result<usize, ErrorObject> {
    let invalid = || ErrorObject::invalid_params(format!("Invalid cursor: {cursor:?}"));
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let text = std::str::from_utf8(&bytes).map_err(|_| invalid())?;
    let digits = text.strip_prefix(PREFIX).ok_or_else(invalid)?;
    digits.parse().map_err(|_| invalid())
}

/// One page of `items` starting at `offset`, and the cursor of the next page.
pub(crate) fn page<T: Clone>(items: &[T], offset: usize, size: usize) -> (Vec<T>, Option<String>) {
    let start = offset.min(items.len());
    let end = start.saturating_add(size.max(1)).min(items.len());
    let next = (end < items.len()).then(|| encode_cursor(end));
    (items[start..end].to_vec(), next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trips() {
        assert_eq!(decode_cursor(&encode_cursor(42)).unwrap(), 42);
    }

    #[test]
    fn garbage_cursor_is_invalid_params() {
        for bad in ["", "!!", "dHcxOng", "aGVsbG8"] {
            let err = decode_cursor(bad).unwrap_err();
            assert_eq!(err.code, -32602, "{bad}");
            assert_eq!(err.message, format!("Invalid cursor: {bad:?}"));
        }
    }

    #[test]
    fn pages_cover_everything_once() {
        let items: Vec<u32> = (0..5).collect();
        let (first, next) = page(&items, 0, 2);
        assert_eq!(first, vec![0, 1]);
        let (second, next) = page(&items, decode_cursor(&next.unwrap()).unwrap(), 2);
        assert_eq!(second, vec![2, 3]);
        let (last, next) = page(&items, decode_cursor(&next.unwrap()).unwrap(), 2);
        assert_eq!((last, next), (vec![4], None));
    }
}
