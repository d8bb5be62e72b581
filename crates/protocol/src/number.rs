//! JSON numbers for fields the schema types as `number`.
//!
//! Such fields are `f64` in Rust. serde_json writes `50.0_f64` as `50.0`, which a
//! peer reads the same as `50` but which is a different `serde_json::Value`; the
//! helpers here write integral values as integers so that `50` round-trips as `50`.

use serde::{Serialize, Serializer};

/// The largest integer an `f64` holds exactly (2^53).
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

/// Serializes an `f64` as an integer when it is integral and exactly representable.
struct Number(f64);

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        if v.is_finite() && v.fract() == 0.0 && v.abs() <= MAX_EXACT {
            if v >= 0.0 {
                serializer.serialize_u64(v as u64)
            } else {
                serializer.serialize_i64(v as i64)
            }
        } else {
            serializer.serialize_f64(v)
        }
    }
}

/// `serialize_with` for an `f64` field.
pub(crate) fn f64<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    Number(*value).serialize(serializer)
}

/// `serialize_with` for an `Option<f64>` field (used with `skip_serializing_if`).
pub(crate) fn opt_f64<S: Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => serializer.serialize_some(&Number(*v)),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    #[derive(serde::Serialize)]
    struct N(#[serde(serialize_with = "super::f64")] f64);

    #[test]
    fn integral_values_are_written_as_integers() {
        let s = |v: f64| serde_json::to_string(&N(v)).unwrap();
        assert_eq!(s(50.0), "50");
        assert_eq!(s(-3.0), "-3");
        assert_eq!(s(-0.0), "0");
        assert_eq!(s(0.5), "0.5");
        assert_eq!(s(1e300), "1e+300");
        assert_eq!(s(9_007_199_254_740_992.0), "9007199254740992");
        assert_eq!(s(18_014_398_509_481_984.0), "1.8014398509481984e+16");
        assert_eq!(s(f64::NAN), "null");
    }
}
