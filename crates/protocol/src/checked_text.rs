//! Reading JSON text that serde_json has already checked (a [`RawValue`]'s):
//! an object's members are found by their delimiters alone, without checking
//! the text a second time.

use std::borrow::Cow;

use serde_json::value::RawValue;

/// A reader of the members of `text` when it is an object (`None` when it
/// is not): each name (decoded when it has escapes), then its value, read
/// or passed over.
///
/// The text must be valid JSON, which a [`RawValue`] always is; the reading
/// relies on it (a string ends at the first quote not escaped, brackets
/// inside strings do not count).
pub(crate) fn object_reader(text: &RawValue) -> Option<ObjectReader<'_>> {
    let text = text.get();
    let start = skip_space(text.as_bytes(), 0);
    (text.as_bytes().get(start) == Some(&b'{')).then_some(ObjectReader {
        text,
        at: start + 1,
    })
}

/// Reads an object's members in order (see [`object_reader`]): after each
/// [`ObjectReader::next_name`] comes [`ObjectReader::next_value`] or
/// [`ObjectReader::pass`].
pub(crate) struct ObjectReader<'a> {
    text: &'a str,
    /// Where the next name (or the separator before it), or the value of
    /// the name just read, starts.
    at: usize,
}

impl<'a> ObjectReader<'a> {
    /// The next member's name; `None` at the object's end.
    pub(crate) fn next_name(&mut self) -> Option<Cow<'a, str>> {
        let bytes = self.text.as_bytes();
        let mut at = skip_space(bytes, self.at);
        if bytes.get(at) == Some(&b',') {
            at = skip_space(bytes, at + 1);
        }
        if bytes.get(at) != Some(&b'"') {
            // `}`: the object's end.
            return None;
        }
        let (name_end, escaped) = string_span(bytes, at);
        let name = match escaped {
            // Between the quotes: a string without escapes is its own value.
            false => Cow::Borrowed(&self.text[at + 1..name_end - 1]),
            true => Cow::Owned(serde_json::from_str(&self.text[at..name_end]).ok()?),
        };
        // The colon, between optional spaces.
        self.at = skip_space(bytes, skip_space(bytes, name_end) + 1);
        Some(name)
    }

    /// The text from the current value's start to the object's end.
    pub(crate) fn rest(&self) -> &'a str {
        &self.text[self.at.min(self.text.len())..]
    }

    /// Passes over the first `length` bytes of [`ObjectReader::rest`]: the
    /// current value, when the caller knows its length.
    pub(crate) fn pass(&mut self, length: usize) {
        self.at += length;
    }

    /// The current value's text.
    pub(crate) fn next_value(&mut self) -> &'a str {
        let rest = self.rest();
        let value = &rest[..value_len(rest)];
        self.at += value.len();
        value
    }
}

/// The value of a JSON string's text (quotes included): borrowed when it has
/// no escapes (a valid JSON string without a backslash is its own value
/// between the quotes), decoded otherwise. `None` when the text is not a
/// string.
///
/// ```
/// use std::borrow::Cow;
/// use toolwire_protocol::string_value;
/// assert!(matches!(string_value(r#""plain""#), Some(Cow::Borrowed("plain"))));
/// assert_eq!(string_value(r#""a\u0062""#).unwrap(), "ab");
/// assert_eq!(string_value("12"), None);
/// ```
pub fn string_value(text: &str) -> Option<Cow<'_, str>> {
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// Just past the string that starts at `at` (its closing quote).
fn string_end(bytes: &[u8], at: usize) -> usize {
    string_span(bytes, at).0
}

/// Just past the string that starts at `at`, and whether it has escapes.
fn string_span(bytes: &[u8], mut at: usize) -> (usize, bool) {
    let mut escaped = false;
    at += 1;
    while let Some(found) = bytes
        .get(at..)
        .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
    {
        at += found;
        if bytes[at] == b'"' {
            return (at + 1, escaped);
        }
        // A backslash and the byte it escapes.
        escaped = true;
        at += 2;
    }
    (bytes.len(), escaped)
}

/// The length of the value `text` starts with.
pub(crate) fn value_len(text: &str) -> usize {
    value_end(text.as_bytes(), 0)
}

/// Just past the value that starts at `at`.
fn value_end(bytes: &[u8], at: usize) -> usize {
    match bytes.get(at) {
        Some(b'"') => string_end(bytes, at),
        Some(b'{' | b'[') => nested_end(bytes, at),
        // A number, `true`, `false` or `null`: up to the next delimiter.
        _ => {
            let rest = &bytes[at.min(bytes.len())..];
            let length = rest
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(rest.len());
            at + length
        }
    }
}

/// Just past the object or array that starts at `at`.
fn nested_end(bytes: &[u8], mut at: usize) -> usize {
    let mut depth = 0usize;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'"' => {
                at = string_end(bytes, at);
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return at + 1;
                }
            }
            _ => {}
        }
        at += 1;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    fn members(text: &str) -> Option<Vec<(String, String)>> {
        let text = raw(text);
        let mut reader = object_reader(&text)?;
        let mut members = Vec::new();
        while let Some(name) = reader.next_name() {
            members.push((name.into_owned(), reader.next_value().to_owned()));
        }
        Some(members)
    }

    /// What serde_json reads as the same object's members.
    fn serde_members(text: &str) -> Vec<(String, String)> {
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let pairs: Vec<(String, Box<RawValue>)> =
            serde::Deserializer::deserialize_map(&mut deserializer, PairsVisitor).unwrap();
        assert!(value.is_object());
        pairs
            .into_iter()
            .map(|(name, value)| (name, value.get().to_owned()))
            .collect()
    }

    struct PairsVisitor;

    impl<'de> serde::de::Visitor<'de> for PairsVisitor {
        type Value = Vec<(String, Box<RawValue>)>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut pairs = Vec::new();
            while let Some(pair) = map.next_entry()? {
                pairs.push(pair);
            }
            Ok(pairs)
        }
    }

    #[test]
    fn members_are_found_as_serde_json_finds_them() {
        for text in [
            "{}",
            " { } ",
            r#"{"a":1}"#,
            r#"{ "a" : -1.5e3 , "b":true,"c" :null, "d":false }"#,
            "{\n\t\"a\"\r\n:\n[1, [2, {\"x\": \"]}\"}], \"[\"]\n}",
            r#"{"s": "a \"quoted\" } ] { [ \\", "t": "\\"}"#,
            r#"{"na\u006de": {"deep": {"deeper": [[], {}]}}, "": ""}"#,
            r#"{"a": 1, "a": 2}"#,
            r#"{"é": "ü", "x\"y": "\ud83d\ude00"}"#,
        ] {
            assert_eq!(members(text).unwrap(), serde_members(text), "{text}");
        }
    }

    #[test]
    fn a_value_passed_over_is_not_read() {
        let text = raw(r#"{"a": {"b": [1, "}"]}, "c": 2}"#);
        let mut reader = object_reader(&text).unwrap();
        assert_eq!(reader.next_name().unwrap(), "a");
        assert_eq!(value_len(reader.rest()), r#"{"b": [1, "}"]}"#.len());
        reader.pass(value_len(reader.rest()));
        assert_eq!(reader.next_name().unwrap(), "c");
        assert_eq!(reader.next_value(), "2");
        assert!(reader.next_name().is_none());
    }

    #[test]
    fn other_values_have_no_members() {
        for text in ["[]", "[{\"a\": 1}]", "null", "1", "\"{}\"", "true"] {
            assert!(members(text).is_none(), "{text}");
        }
    }

    #[test]
    fn string_values_are_borrowed_unless_escaped() {
        assert!(matches!(
            string_value(r#""plain""#),
            Some(Cow::Borrowed("plain"))
        ));
        assert_eq!(string_value(r#""a\nb""#).unwrap(), "a\nb");
        assert!(string_value("12").is_none());
        assert!(string_value("null").is_none());
    }
}
