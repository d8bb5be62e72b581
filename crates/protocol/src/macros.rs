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
