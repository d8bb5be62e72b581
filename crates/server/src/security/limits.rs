//! Input limits checked before a tool's schema: the serialized size of the
//! arguments, how deeply they nest, and how long any one string is.
//!
//! A call over a limit gets a tool execution error (`isError: true`), not a
//! protocol error: the model sent the arguments and can fix them (send less,
//! split the work), so it should read why.

use std::io::Write;

use serde_json::Value;
use toolwire_protocol::JsonObject;

/// Caps on a tool call's arguments, checked before schema validation.
///
/// Depth counts containers: `{}` is depth 1, `{"a": [1]}` depth 2. String
/// length is in UTF-8 bytes and applies to object keys too.
///
/// ```
/// use toolwire_server::InputLimits;
/// let limits = InputLimits::default().max_string_bytes(1024);
/// assert_eq!(limits.get_max_string_bytes(), 1024);
/// assert_eq!(limits.get_max_depth(), 32);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputLimits {
    max_bytes: usize,
    max_depth: usize,
    max_string_bytes: usize,
}

/// Default cap on the serialized arguments: 1 MiB.
pub const DEFAULT_MAX_ARGUMENT_BYTES: usize = 1024 * 1024;
/// Default cap on nesting depth: 32.
pub const DEFAULT_MAX_ARGUMENT_DEPTH: usize = 32;
/// Default cap on one string (or key): 256 KiB.
pub const DEFAULT_MAX_STRING_BYTES: usize = 256 * 1024;

impl Default for InputLimits {
    fn default() -> Self {
        InputLimits {
            max_bytes: DEFAULT_MAX_ARGUMENT_BYTES,
            max_depth: DEFAULT_MAX_ARGUMENT_DEPTH,
            max_string_bytes: DEFAULT_MAX_STRING_BYTES,
        }
    }
}

impl InputLimits {
    /// Largest serialized arguments object, in bytes (default 1 MiB).
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Deepest nesting of objects and arrays (default 32).
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// Longest string or object key, in UTF-8 bytes (default 256 KiB).
    pub fn max_string_bytes(mut self, bytes: usize) -> Self {
        self.max_string_bytes = bytes;
        self
    }

    /// No caps at all (schema validation still applies). Only for tools
    /// that need it and bound their input otherwise.
    pub fn unlimited() -> Self {
        InputLimits {
            max_bytes: usize::MAX,
            max_depth: usize::MAX,
            max_string_bytes: usize::MAX,
        }
    }

    /// The size cap.
    pub fn get_max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The depth cap.
    pub fn get_max_depth(&self) -> usize {
        self.max_depth
    }

    /// The string cap.
    pub fn get_max_string_bytes(&self) -> usize {
        self.max_string_bytes
    }

    /// Checks `arguments` of tool `tool`; the error is the text for the model.
    pub(crate) fn check(&self, tool: &str, arguments: &JsonObject) -> Result<(), String> {
        let size = serialized_len(arguments, self.max_bytes);
        if size > self.max_bytes {
            return Err(format!(
                "Arguments for tool {tool} are too large: more than {} bytes as JSON (limit {} bytes). \
                 Send less data, for example by splitting the work across several calls.",
                self.max_bytes, self.max_bytes
            ));
        }
        walk_object(arguments, 1, self).map_err(|problem| match problem.kind {
            Kind::Depth => format!(
                "Arguments for tool {tool} are nested too deeply at {}: more than {} levels of objects and arrays. \
                 Flatten the structure.",
                problem.pointer(),
                self.max_depth
            ),
            Kind::String { len, key } => format!(
                "{} {} of tool {tool} is too long: {len} bytes (limit {} bytes). \
                 Send a shorter value.",
                if key { "An object key at" } else { "Argument" },
                problem.pointer(),
                self.max_string_bytes
            ),
        })
    }
}

/// What is wrong, and where: the path is gathered as the walk unwinds (a
/// walk that finds nothing wrong copies no key).
struct Problem {
    kind: Kind,
    /// The steps from the value back to the root.
    path_back: Vec<String>,
}

enum Kind {
    Depth,
    String { len: usize, key: bool },
}

impl Problem {
    fn new(kind: Kind) -> Problem {
        Problem {
            kind,
            path_back: Vec::new(),
        }
    }

    /// The problem one step further from the root.
    fn at(mut self, step: impl ToString) -> Problem {
        self.path_back.push(step.to_string());
        self
    }

    /// A JSON Pointer (RFC 6901) to where it is; the root is `/`.
    fn pointer(&self) -> String {
        if self.path_back.is_empty() {
            return "/".to_owned();
        }
        self.path_back
            .iter()
            .rev()
            .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
            .collect()
    }
}

fn walk_object(object: &JsonObject, depth: usize, limits: &InputLimits) -> Result<(), Problem> {
    if depth > limits.max_depth {
        return Err(Problem::new(Kind::Depth));
    }
    for (key, value) in object {
        if key.len() > limits.max_string_bytes {
            let kind = Kind::String {
                len: key.len(),
                key: true,
            };
            return Err(Problem::new(kind).at(key));
        }
        walk(value, depth, limits).map_err(|problem| problem.at(key))?;
    }
    Ok(())
}

fn walk(value: &Value, depth: usize, limits: &InputLimits) -> Result<(), Problem> {
    match value {
        Value::String(s) if s.len() > limits.max_string_bytes => Err(Problem::new(Kind::String {
            len: s.len(),
            key: false,
        })),
        Value::Object(object) => walk_object(object, depth + 1, limits),
        Value::Array(items) => {
            if depth + 1 > limits.max_depth {
                return Err(Problem::new(Kind::Depth));
            }
            for (i, item) in items.iter().enumerate() {
                walk(item, depth + 1, limits).map_err(|problem| problem.at(i))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The serialized length of `value`, counting no further than `cap + 1`.
fn serialized_len(value: &JsonObject, cap: usize) -> usize {
    struct Counter {
        len: usize,
        cap: usize,
    }
    impl Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.len = self.len.saturating_add(buf.len());
            if self.len > self.cap {
                return Err(std::io::Error::other("over the cap"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { len: 0, cap };
    let _ = serde_json::to_writer(&mut counter, value);
    counter.len
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn depth_counts_containers() {
        let limits = InputLimits::default().max_depth(2);
        assert!(limits.check("t", &object(json!({"a": [1]}))).is_ok());
        assert!(limits.check("t", &object(json!({"a": {"b": 1}}))).is_ok());
        let err = limits
            .check("t", &object(json!({"a": {"b": [1]}})))
            .unwrap_err();
        assert!(err.contains("nested too deeply at /a/b"), "{err}");
        let err = limits.check("t", &object(json!({"a": [[1]]}))).unwrap_err();
        assert!(err.contains("at /a/0:"), "{err}");
    }

    #[test]
    fn strings_and_keys() {
        let limits = InputLimits::default().max_string_bytes(3);
        assert!(limits.check("t", &object(json!({"abc": "xyz"}))).is_ok());
        let err = limits
            .check("t", &object(json!({"a": ["ok", "toolong"]})))
            .unwrap_err();
        assert!(
            err.starts_with("Argument /a/1 of tool t is too long: 7 bytes"),
            "{err}"
        );
        let err = limits
            .check("t", &object(json!({"a/b~": {"long key": 1}})))
            .unwrap_err();
        assert!(err.contains("is too long"), "{err}");
    }

    #[test]
    fn size_is_bounded_work() {
        assert_eq!(serialized_len(&object(json!({"a": 1})), 100), 7);
        assert!(serialized_len(&object(json!({"a": "x".repeat(1000)})), 10) > 10);
    }
}
