//! Tool-name patterns of the configuration: `*` matches any run of
//! characters (none included), `?` any one character, anything else itself.

/// A pattern such as `write_*`.
///
/// ```
/// use toolwire_gateway::Glob;
/// assert!(Glob::new("write_*").matches("write_file"));
/// assert!(!Glob::new("write_*").matches("read_file"));
/// assert!(Glob::new("get_?").matches("get_a"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob(String);

impl Glob {
    /// The pattern `pattern`.
    pub fn new(pattern: impl Into<String>) -> Glob {
        Glob(pattern.into())
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when `name` matches the whole pattern.
    pub fn matches(&self, name: &str) -> bool {
        let pattern: Vec<char> = self.0.chars().collect();
        let name: Vec<char> = name.chars().collect();
        matches_from(&pattern, &name)
    }
}

/// Iterative matching with one backtrack point (the last `*`): linear in
/// practice, never exponential.
fn matches_from(pattern: &[char], name: &[char]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some('?') => (p, n) = (p + 1, n + 1),
            Some(c) if *c == name[n] => (p, n) = (p + 1, n + 1),
            _ => match star {
                Some((star_p, star_n)) => {
                    star = Some((star_p, star_n + 1));
                    (p, n) = (star_p + 1, star_n + 1);
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_whole_names() {
        let cases = [
            ("*", "", true),
            ("*", "anything", true),
            ("get_*", "get_", true),
            ("get_*", "get_user", true),
            ("get_*", "forget_user", false),
            ("*_file", "read_file", true),
            ("*_file", "read_files", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("exact", "exact", true),
            ("exact", "exactly", false),
            ("?", "é", true),
        ];
        for (pattern, name, expected) in cases {
            assert_eq!(
                Glob::new(pattern).matches(name),
                expected,
                "{pattern} ~ {name}"
            );
        }
    }
}
