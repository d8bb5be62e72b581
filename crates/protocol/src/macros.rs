//! Helper macros for wire types.

/// Declares a unit struct that serializes as one fixed string and accepts only
/// that string, for schema `const` members such as `"type": "boolean"`.
macro_rules! const_str {
    ($(#[$attr:meta])* $name:ident = $value:literal) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name;

        impl $name {
            /// The one string this marker stands for.
            pub const VALUE: &'static str = $value;
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str($value)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(deserializer)?;
                if value == $value {
                    Ok($name)
                } else {
                    Err(<D::Error as ::serde::de::Error>::custom(format!(
                        "expected {:?}, found {:?}",
                        $value, value
                    )))
                }
            }
        }
    };
}

/// Declares the result of a paginated `*/list` method: `resultType`, the
/// entries of this page under the field given, `nextCursor`, the caching
/// hints `ttlMs` and `cacheScope`, and `_meta`, in that order on the wire.
macro_rules! list_result {
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            $(#[$items_attr:meta])*
            pub $items:ident: Vec<$item:ty>,
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Default, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            /// Always `complete`.
            #[serde(default)]
            pub result_type: $crate::result::ResultType,
            $(#[$items_attr])*
            pub $items: Vec<$item>,
            /// The cursor of the next page, if any.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub next_cursor: Option<String>,
            /// How long the page may be considered fresh (0 when a peer omits it).
            #[serde(default)]
            pub ttl_ms: u64,
            /// Who may cache the page (`private` when a peer omits it).
            #[serde(default)]
            pub cache_scope: $crate::result::CacheScope,
            /// Result metadata.
            #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
            pub meta: Option<$crate::meta::Meta>,
        }
    };
}
