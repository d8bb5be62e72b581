//! Why a command failed and its exit code; the names closest to a mistyped one.

/// A failed command: the exit code, what went wrong, and a hint.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
    pub hint: Option<String>,
}

impl Failure {
    /// The tool ran and reported an error (`isError: true`).
    pub const TOOL: u8 = 1;
    /// A protocol, transport or usage error.
    pub const PROTOCOL: u8 = 2;
    /// The user said no at a confirmation prompt.
    pub const DENIED: u8 = 3;

    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
            hint: None,
        }
    }

    /// A mistake on the command line (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Failure::new(Self::PROTOCOL, message)
    }

    /// A protocol or transport failure (exit 2).
    pub fn protocol(message: impl Into<String>) -> Self {
        Failure::new(Self::PROTOCOL, message)
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Prints the message and the hint on stderr. Both may quote the
    /// server (its error messages, tool names, the end of its stderr), so
    /// control sequences in them are shown escaped.
    pub fn report(&self) {
        use crate::safe_text;
        if !self.message.is_empty() {
            eprintln!("toolwire: {}", safe_text::text(&self.message));
        }
        if let Some(hint) = &self.hint {
            eprintln!("hint: {}", safe_text::text(hint));
        }
    }
}

/// Up to `count` names close to `wanted`, closest first: within a few
/// edits, or containing it (or contained in it), and no more than one edit
/// further than the closest. When none is close, the first names in the
/// server's order.
pub fn closest<'a>(wanted: &str, names: &'a [String], count: usize) -> Vec<&'a str> {
    let wanted_lower = wanted.to_ascii_lowercase();
    let limit = (wanted.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = names
        .iter()
        .filter_map(|name| {
            let lower = name.to_ascii_lowercase();
            let distance = edit_distance(&wanted_lower, &lower);
            let related = lower.contains(&wanted_lower) || wanted_lower.contains(&lower);
            (distance <= limit || related).then_some((distance, name.as_str()))
        })
        .collect();
    let Some(best) = scored.iter().map(|(d, _)| *d).min() else {
        return names.iter().take(count).map(String::as_str).collect();
    };
    scored.retain(|(d, _)| *d <= best + 1);
    scored.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(count).map(|(_, n)| n).collect()
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current.push(substitution.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("echo", "echo"), 0);
        assert_eq!(edit_distance("ecko", "echo"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn closest_names_come_first() {
        let names: Vec<String> = ["echo", "stats", "countdown", "delete_file", "checkout"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(closest("ecko", &names, 3), ["echo"]);
        assert_eq!(closest("Echo", &names, 3), ["echo"]);
        assert_eq!(closest("zzzzzzzz", &names, 2), ["echo", "stats"]);
        assert_eq!(closest("delete", &names, 1), ["delete_file"]);
        assert_eq!(closest("count", &names, 1), ["countdown"]);
    }
}
