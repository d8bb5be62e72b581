//! The names the gateway exposes: `<prefix><separator><tool>`, made of the
//! characters the spec allows in tool names, shortened deterministically
//! (with a short hash of the full name) when longer than the configured
//! maximum, and never shadowing each other.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

/// Length of the hash that ends a shortened name: `_` and 8 hex digits.
const HASH_SUFFIX_LEN: usize = 9;

/// The exposed name of `tool` of an upstream with `prefix`.
///
/// ```
/// use toolwire_gateway::exposed_name;
/// assert_eq!(exposed_name("files", "__", "read_file", 64), "files__read_file");
/// assert_eq!(exposed_name("", "__", "read file", 64), "read_file");
/// let long = exposed_name("files", "__", &"x".repeat(80), 64);
/// assert_eq!(long.len(), 64);
/// assert_eq!(long, exposed_name("files", "__", &"x".repeat(80), 64), "deterministic");
/// ```
pub fn exposed_name(prefix: &str, separator: &str, tool: &str, max_len: usize) -> String {
    let full = if prefix.is_empty() {
        allowed_characters(tool)
    } else {
        allowed_characters(&format!("{prefix}{separator}{tool}"))
    };
    if full.len() <= max_len {
        return full;
    }
    let digest = Sha256::digest(format!("{prefix}\u{0}{separator}\u{0}{tool}").as_bytes());
    let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let keep = max_len.saturating_sub(HASH_SUFFIX_LEN);
    // Only ASCII remains after `allowed_characters`: any byte is a boundary.
    format!("{}_{hash}", &full[..keep])
}

/// Keeps `A-Z a-z 0-9 _ - .`; anything else becomes `_`.
fn allowed_characters(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Where an exposed name leads: an upstream (by index) and its own name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The upstream's index in the configuration.
    pub upstream: usize,
    /// The tool's name on that upstream.
    pub tool: String,
}

/// Two tools that would be exposed under one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    /// The name both would get.
    pub name: String,
    /// The tool that had it first.
    pub first: Origin,
    /// The tool that wanted it too.
    pub second: Origin,
}

/// Exposed names and where they lead, built tool by tool.
#[derive(Debug, Default)]
pub struct NameTable {
    routes: BTreeMap<String, Origin>,
}

impl NameTable {
    /// Claims `name` for `origin`; a name already taken is a collision,
    /// never a silent rename.
    pub fn claim(&mut self, name: String, origin: Origin) -> Result<(), Collision> {
        if let Some(first) = self.routes.get(&name) {
            return Err(Collision {
                name,
                first: first.clone(),
                second: origin,
            });
        }
        self.routes.insert(name, origin);
        Ok(())
    }

    /// Where `name` leads.
    pub fn route(&self, name: &str) -> Option<&Origin> {
        self.routes.get(name)
    }

    /// Frees `name` (its tool is no longer served).
    pub fn release(&mut self, name: &str) {
        self.routes.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortened_names_keep_the_start_and_differ_by_their_hash() {
        let a = exposed_name("db", "__", &format!("{}a", "q".repeat(70)), 32);
        let b = exposed_name("db", "__", &format!("{}b", "q".repeat(70)), 32);
        assert_eq!((a.len(), b.len()), (32, 32));
        assert!(a.starts_with("db__qqqq"), "{a}");
        assert_ne!(a, b);
        assert_eq!(exposed_name("p", ".", "ok", 5), "p.ok");
    }

    #[test]
    fn a_taken_name_is_a_collision() {
        let mut table = NameTable::default();
        let origin = |upstream, tool: &str| Origin {
            upstream,
            tool: tool.into(),
        };
        table.claim("a__x".into(), origin(0, "x")).unwrap();
        let collision = table.claim("a__x".into(), origin(1, "x")).unwrap_err();
        assert_eq!(collision.first, origin(0, "x"));
        assert_eq!(collision.second, origin(1, "x"));
        assert_eq!(table.route("a__x"), Some(&origin(0, "x")));
    }
}
