//! What validation reports: every violation, each with where it happened.

use std::fmt;

/// One way an instance fails its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer to the offending value in the instance; `""` for the root.
    pub instance_path: String,
    /// JSON pointer to the keyword in the schema that failed, e.g. `/properties/age/minimum`.
    pub schema_path: String,
    /// A human-readable description, e.g. `-1 is less than the minimum of 0`.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.instance_path.is_empty() {
            "(root)"
        } else {
            &self.instance_path
        };
        write!(f, "{at}: {}", self.message)
    }
}

/// Every violation found when validating one instance; never empty.
///
/// Displays as one line per violation:
///
/// ```
/// use serde_json::json;
/// use toolwire_schema::CompiledSchema;
/// let schema = CompiledSchema::compile(&json!({
///     "type": "object",
///     "properties": {"age": {"type": "integer", "minimum": 0}},
///     "required": ["name"]
/// })).unwrap();
/// let errors = schema.validate(&json!({"age": -1})).unwrap_err();
/// assert_eq!(errors.to_string(), "(root): \"name\" is a required property\n/age: -1 is less than the minimum of 0");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationErrors {
    violations: Vec<Violation>,
}

impl ValidationErrors {
    /// Wraps a non-empty list of violations.
    pub(crate) fn new(violations: Vec<Violation>) -> Self {
        debug_assert!(!violations.is_empty());
        Self { violations }
    }

    /// The violations, in the order the validator found them.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// Consumes the errors, returning the violations.
    pub fn into_violations(self) -> Vec<Violation> {
        self.violations
    }

    /// How many violations there are (at least one).
    pub fn len(&self) -> usize {
        self.violations.len()
    }

    /// Always `false`: a `ValidationErrors` holds at least one violation.
    pub fn is_empty(&self) -> bool {
        self.violations.is_empty()
    }

    /// Iterates over the violations.
    pub fn iter(&self) -> std::slice::Iter<'_, Violation> {
        self.violations.iter()
    }
}

impl<'a> IntoIterator for &'a ValidationErrors {
    type Item = &'a Violation;
    type IntoIter = std::slice::Iter<'a, Violation>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, violation) in self.violations.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{violation}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationErrors {}

#[cfg(test)]
mod tests {
    use super::*;

    fn violation(instance_path: &str, message: &str) -> Violation {
        Violation {
            instance_path: instance_path.into(),
            schema_path: "/x".into(),
            message: message.into(),
        }
    }

    #[test]
    fn display_uses_root_marker_and_one_line_each() {
        let errors = ValidationErrors::new(vec![violation("", "bad"), violation("/a/0", "worse")]);
        assert_eq!(errors.to_string(), "(root): bad\n/a/0: worse");
        assert_eq!(errors.len(), 2);
        assert!(!errors.is_empty());
        assert_eq!((&errors).into_iter().count(), 2);
    }
}
