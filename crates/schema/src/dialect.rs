//! JSON Schema dialects: which ones are supported and how `$schema` selects one.

use std::fmt;

use jsonschema::Draft;
use serde_json::Value;

use crate::error::SchemaError;

/// A JSON Schema dialect this crate can validate with.
///
/// A schema without `$schema` uses [`Dialect::Draft202012`], as MCP requires.
/// `$schema` may name any of these dialects by its meta-schema URI, with
/// `http` or `https` and with or without a trailing `#`
/// (e.g. `http://json-schema.org/draft-07/schema#`); the version-less
/// `https://json-schema.org/schema` means 2020-12.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Dialect {
    /// JSON Schema draft 4.
    Draft4,
    /// JSON Schema draft 6.
    Draft6,
    /// JSON Schema draft 7.
    Draft7,
    /// JSON Schema 2019-09.
    Draft201909,
    /// JSON Schema 2020-12, the default.
    #[default]
    Draft202012,
}

impl Dialect {
    /// Every supported dialect, oldest first.
    pub const ALL: [Dialect; 5] = [
        Dialect::Draft4,
        Dialect::Draft6,
        Dialect::Draft7,
        Dialect::Draft201909,
        Dialect::Draft202012,
    ];

    /// The dialect a schema declares through `$schema`, or 2020-12 when it declares none.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolwire_schema::Dialect;
    /// let draft7 = json!({"$schema": "http://json-schema.org/draft-07/schema#"});
    /// assert_eq!(Dialect::of(&draft7).unwrap(), Dialect::Draft7);
    /// assert_eq!(Dialect::of(&json!({"type": "object"})).unwrap(), Dialect::Draft202012);
    /// assert!(Dialect::of(&json!({"$schema": "https://example.com/my-dialect"})).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`SchemaError::UnsupportedDialect`] when `$schema` is not a string naming a
    /// supported dialect.
    pub fn of(schema: &Value) -> Result<Dialect, SchemaError> {
        match schema.get("$schema") {
            None => Ok(Dialect::default()),
            Some(Value::String(uri)) => Self::from_uri(uri),
            Some(other) => Err(SchemaError::UnsupportedDialect(other.to_string())),
        }
    }

    /// The dialect named by a meta-schema URI.
    ///
    /// # Errors
    ///
    /// [`SchemaError::UnsupportedDialect`] when the URI names no supported dialect.
    pub fn from_uri(uri: &str) -> Result<Dialect, SchemaError> {
        match Draft::from_schema_uri(uri) {
            Draft::Draft4 => Ok(Dialect::Draft4),
            Draft::Draft6 => Ok(Dialect::Draft6),
            Draft::Draft7 => Ok(Dialect::Draft7),
            Draft::Draft201909 => Ok(Dialect::Draft201909),
            Draft::Draft202012 => Ok(Dialect::Draft202012),
            _ => Err(SchemaError::UnsupportedDialect(uri.to_owned())),
        }
    }

    /// The canonical meta-schema URI of this dialect.
    pub fn uri(self) -> &'static str {
        match self {
            Dialect::Draft4 => "http://json-schema.org/draft-04/schema#",
            Dialect::Draft6 => "http://json-schema.org/draft-06/schema#",
            Dialect::Draft7 => "http://json-schema.org/draft-07/schema#",
            Dialect::Draft201909 => "https://json-schema.org/draft/2019-09/schema",
            Dialect::Draft202012 => "https://json-schema.org/draft/2020-12/schema",
        }
    }

    /// The keyword that declares a resource's URI in this dialect (`id` in draft 4).
    pub(crate) fn id_keyword(self) -> &'static str {
        match self {
            Dialect::Draft4 => "id",
            _ => "$id",
        }
    }

    pub(crate) fn draft(self) -> Draft {
        match self {
            Dialect::Draft4 => Draft::Draft4,
            Dialect::Draft6 => Draft::Draft6,
            Dialect::Draft7 => Draft::Draft7,
            Dialect::Draft201909 => Draft::Draft201909,
            Dialect::Draft202012 => Draft::Draft202012,
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Dialect::Draft4 => "draft-04",
            Dialect::Draft6 => "draft-06",
            Dialect::Draft7 => "draft-07",
            Dialect::Draft201909 => "2019-09",
            Dialect::Draft202012 => "2020-12",
        };
        f.write_str(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn default_is_2020_12() {
        assert_eq!(Dialect::of(&json!({})).unwrap(), Dialect::Draft202012);
        assert_eq!(Dialect::of(&json!(true)).unwrap(), Dialect::Draft202012);
    }

    #[test]
    fn uri_variants_are_recognised() {
        for (uri, dialect) in [
            ("http://json-schema.org/draft-07/schema#", Dialect::Draft7),
            ("https://json-schema.org/draft-07/schema", Dialect::Draft7),
            ("http://json-schema.org/draft-04/schema#", Dialect::Draft4),
            ("http://json-schema.org/draft-06/schema", Dialect::Draft6),
            (
                "https://json-schema.org/draft/2019-09/schema",
                Dialect::Draft201909,
            ),
            (
                "https://json-schema.org/draft/2020-12/schema#",
                Dialect::Draft202012,
            ),
            (
                "http://json-schema.org/draft/2020-12/schema",
                Dialect::Draft202012,
            ),
        ] {
            assert_eq!(Dialect::from_uri(uri).unwrap(), dialect, "{uri}");
        }
    }

    #[test]
    fn canonical_uris_round_trip() {
        for dialect in Dialect::ALL {
            assert_eq!(Dialect::from_uri(dialect.uri()).unwrap(), dialect);
        }
    }

    #[test]
    fn unknown_dialects_are_rejected() {
        for uri in [
            "https://example.com/schema",
            "http://json-schema.org/draft-03/schema#",
            "",
        ] {
            let err = Dialect::from_uri(uri).unwrap_err();
            assert!(
                matches!(&err, SchemaError::UnsupportedDialect(u) if u == uri),
                "{err:?}"
            );
        }
    }

    #[test]
    fn non_string_schema_keyword_is_rejected() {
        let err = Dialect::of(&json!({"$schema": 7})).unwrap_err();
        assert!(matches!(err, SchemaError::UnsupportedDialect(ref u) if u == "7"));
    }
}
