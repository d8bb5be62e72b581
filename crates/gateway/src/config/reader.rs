//! Reading the TOML file with the position of every value, so that each
//! refusal names the line, the key and what is expected.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::{ConfigError, ENV_EXPECTED, SECRET_KEYS};

/// A value read from the file, or why it was refused.
pub(super) type Checked<T> = Result<T, ConfigError>;
pub(super) type Value<'a> = Spanned<DeValue<'a>>;

/// The text being read, for errors.
pub(super) struct File<'a> {
    pub(super) text: &'a str,
    pub(super) name: &'a str,
}

impl File<'_> {
    /// An error at `span` (no line without one).
    pub(super) fn error(
        &self,
        span: Option<&Range<usize>>,
        key: &str,
        message: String,
    ) -> ConfigError {
        ConfigError {
            source_name: self.name.to_owned(),
            line: span.map(|span| line_of(self.text, span.start)),
            key: key.to_owned(),
            message,
        }
    }

    /// The TOML parser's error, with its line and column.
    pub(super) fn syntax_error(&self, error: &toml::de::Error) -> ConfigError {
        let span = error.span().unwrap_or(0..0);
        if error.message() == "duplicate key" {
            let key = self.text.get(span.clone()).unwrap_or_default();
            let message = "appears twice in the same table; expected it once".to_owned();
            return self.error(Some(&span), key, message);
        }
        let column = self.text[..span.start.min(self.text.len())]
            .rsplit('\n')
            .next()
            .map_or(1, |line| line.chars().count() + 1);
        let message = format!("invalid TOML at column {column}: {}", error.message());
        self.error(Some(&span), "", message)
    }
}

/// The 1-based line of byte `offset` in `text`.
pub(super) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// "unknown key; expected one of ...", with the likeliest meant.
pub(super) fn unknown_key(name: &str, allowed: &[&str]) -> String {
    let list = allowed.join(", ");
    let closest = allowed
        .iter()
        .map(|key| (edit_distance(name, key), *key))
        .filter(|(distance, key)| *distance <= 2 || (name.len() >= 3 && key.starts_with(name)))
        .min();
    match closest {
        Some((_, key)) => format!("unknown key (did you mean {key}?); expected one of {list}"),
        None => format!("unknown key; expected one of {list}"),
    }
}

/// Levenshtein distance, in characters.
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// `key` appended to the key path `path`, quoted unless bare.
pub(super) fn join(path: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (path.is_empty(), bare) {
        (true, true) => key.to_owned(),
        (true, false) => format!("{key:?}"),
        (false, true) => format!("{path}.{key}"),
        (false, false) => format!("{path}.{key:?}"),
    }
}

/// A table of the file, with its key path and span (none for the root).
pub(super) struct Table<'a> {
    pub(super) file: &'a File<'a>,
    pub(super) path: String,
    pub(super) span: Option<Range<usize>>,
    pub(super) entries: &'a DeTable<'a>,
}

/// A value of the file, with its key path.
pub(super) struct Field<'a> {
    pub(super) file: &'a File<'a>,
    pub(super) path: String,
    pub(super) value: &'a Value<'a>,
}

impl<'a> Table<'a> {
    /// An error about the table itself, at its header.
    pub(super) fn error(&self, message: impl Into<String>) -> ConfigError {
        self.file
            .error(self.span.as_ref(), &self.path, message.into())
    }

    /// The value of `key`, if set.
    pub(super) fn get(&self, key: &str) -> Option<Field<'a>> {
        self.entries.get(key).map(|value| Field {
            file: self.file,
            path: join(&self.path, key),
            value,
        })
    }

    /// The value of `key`, which must be set.
    pub(super) fn require(&self, key: &str, expected: &str) -> Checked<Field<'a>> {
        self.get(key).ok_or_else(|| {
            let message = format!("missing; expected {expected}");
            self.file
                .error(self.span.as_ref(), &join(&self.path, key), message)
        })
    }

    /// The entries in the file's order.
    pub(super) fn entries(&self) -> Vec<(&'a Spanned<toml::de::DeString<'a>>, &'a Value<'a>)> {
        let mut entries: Vec<_> = self.entries.iter().collect();
        entries.sort_by_key(|(key, _)| key.span().start);
        entries
    }

    /// Refuses any key not in `allowed`, telling where a secret goes instead
    /// when the key looks like one.
    pub(super) fn check_keys(&self, allowed: &[&str], secret_hint: &str) -> Checked<()> {
        for (key, _) in self.entries() {
            let name = key.get_ref().as_ref();
            if allowed.contains(&name) {
                continue;
            }
            let message = if SECRET_KEYS.contains(&name) {
                format!("refused: secrets are never read from the file; {secret_hint}")
            } else {
                unknown_key(name, allowed)
            };
            return Err(self
                .file
                .error(Some(&key.span()), &join(&self.path, name), message));
        }
        Ok(())
    }

    /// The same table under another key path.
    pub(super) fn named(self, path: String) -> Table<'a> {
        Table { path, ..self }
    }
}

impl<'a> Field<'a> {
    /// An error at this value.
    pub(super) fn error(&self, message: impl Into<String>) -> ConfigError {
        self.file
            .error(Some(&self.value.span()), &self.path, message.into())
    }

    /// "expected `what`, got <this value>".
    pub(super) fn expected(&self, what: &str) -> ConfigError {
        self.error(format!("expected {what}, got {}", self.shown()))
    }

    /// The value as the message shows it.
    pub(super) fn shown(&self) -> String {
        match self.value.get_ref() {
            DeValue::String(s) => format!("{s:?}"),
            DeValue::Array(items) if items.is_empty() => "an empty array".into(),
            DeValue::Array(_) => "an array".into(),
            DeValue::Table(_) => "a table".into(),
            DeValue::Datetime(d) => format!("a date-time ({d})"),
            _ => self.file.text[self.value.span()].to_owned(),
        }
    }

    /// The string, if it is one.
    pub(super) fn str(&self) -> Option<&'a str> {
        self.value.get_ref().as_str()
    }

    /// A string for which `valid` holds.
    pub(super) fn string(&self, what: &str, valid: impl Fn(&str) -> bool) -> Checked<String> {
        match self.str() {
            Some(s) if valid(s) => Ok(s.to_owned()),
            _ => Err(self.expected(what)),
        }
    }

    /// A number (integer or float).
    pub(super) fn number(&self) -> Option<f64> {
        match self.value.get_ref() {
            DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
                .ok()
                .map(|i| i as f64),
            DeValue::Float(f) => f.as_str().parse().ok(),
            _ => None,
        }
    }

    /// An integer.
    pub(super) fn integer(&self) -> Option<i64> {
        let i = self.value.get_ref().as_integer()?;
        i64::from_str_radix(i.as_str(), i.radix()).ok()
    }

    /// The items of an array, keyed `path[0]`, `path[1]`, ...
    pub(super) fn items(&self, what: &str) -> Checked<Vec<Field<'a>>> {
        let items = self
            .value
            .get_ref()
            .as_array()
            .ok_or_else(|| self.expected(what))?;
        Ok(items
            .iter()
            .enumerate()
            .map(|(n, value)| Field {
                file: self.file,
                path: format!("{}[{n}]", self.path),
                value,
            })
            .collect())
    }

    /// The value as a table.
    pub(super) fn table(&self, what: &str) -> Checked<Table<'a>> {
        let entries = self
            .value
            .get_ref()
            .as_table()
            .ok_or_else(|| self.expected(what))?;
        Ok(self.as_table(entries))
    }

    pub(super) fn as_table(&self, entries: &'a DeTable<'a>) -> Table<'a> {
        Table {
            file: self.file,
            path: self.path.clone(),
            span: Some(self.value.span()),
            entries,
        }
    }

    /// The name of an environment variable; a value that is not one is not
    /// repeated, in case it is the secret itself.
    pub(super) fn env_name(&self) -> Checked<String> {
        match self.str() {
            Some(s) if is_env_name(s) => Ok(s.to_owned()),
            Some(_) => Err(self.error(format!(
                "expected {ENV_EXPECTED} holding the secret, not the secret itself; \
                 got a string that is not such a name (not repeated here)"
            ))),
            None => Err(self.expected(ENV_EXPECTED)),
        }
    }

    /// An array of non-empty strings.
    pub(super) fn strings(&self, what: &str, item: &str) -> Checked<Vec<String>> {
        self.items(what)?
            .iter()
            .map(|field| field.string(item, |s| !s.is_empty()))
            .collect()
    }
}

/// Letters, digits, `_`, `-` and `.`: what the spec allows in tool names.
pub(super) fn is_tool_chars(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// A portable environment variable name.
pub(super) fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An upstream's name: non-empty, no `/` (it separates upstream and tool in
/// `approve UPSTREAM/TOOL`), no control characters.
pub(super) fn is_upstream_name(s: &str) -> bool {
    !s.is_empty() && !s.chars().any(|c| c == '/' || c.is_control())
}

/// `http://` or `https://` followed by a host.
pub(super) fn is_http_url(s: &str) -> bool {
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"));
    rest.is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
}
