//! Key names. Every key starts with the configured prefix; the two keys a
//! handle script touches share one hash tag (the owner), so that on Redis
//! Cluster they live in one slot. See the crate docs for the layout.

/// Escapes `%`, `{`, `}` and `:` as `%25`, `%7B`, `%7D` and `%3A`: an
/// escaped part cannot end a hash tag early or pass for a separator, and
/// different parts stay different.
pub(crate) fn escape(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for c in part.chars() {
        match c {
            '%' => out.push_str("%25"),
            '{' => out.push_str("%7B"),
            '}' => out.push_str("%7D"),
            ':' => out.push_str("%3A"),
            c => out.push(c),
        }
    }
    out
}

/// Why a key prefix is refused: a brace in it would change which part of
/// each key Redis Cluster hashes.
pub(crate) fn check_prefix(prefix: &str) -> Result<(), String> {
    if prefix.contains(['{', '}']) {
        return Err(format!(
            "the key prefix {prefix:?} contains a brace; the stores place their own hash tags"
        ));
    }
    Ok(())
}

/// The bucket of rate-limit key `key`: `{prefix}rl:{key}`.
pub(crate) fn rate_key(prefix: &str, key: &str) -> String {
    format!("{prefix}rl:{key}")
}

/// The record of legacy session `id`: `{prefix}session:ID` (escaped).
pub(crate) fn session_key(prefix: &str, id: &str) -> String {
    format!("{prefix}session:{}", escape(id))
}

/// The two keys of one handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HandleKeys {
    /// The hash holding the handle: `owner`, `value` (JSON), `idle` (ms),
    /// and while a `modify` runs, `lock` and `lock_until`.
    pub handle: String,
    /// The owner's sorted set of live handle ids, scored by expiry (ms).
    pub owned: String,
}

/// The keys of handle `id` of `owner` in the store named `store`:
/// `{prefix}h:{o:OWNER}:STORE:id:ID` and `{prefix}h:{o:OWNER}:STORE:owned`
/// (OWNER and STORE escaped).
pub(crate) fn handle_keys(prefix: &str, store: &str, owner: &str, id: &str) -> HandleKeys {
    let base = format!("{prefix}h:{{o:{}}}:{}", escape(owner), escape(store));
    HandleKeys {
        handle: format!("{base}:id:{id}"),
        owned: format!("{base}:owned"),
    }
}

/// The two keys of one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskKeys {
    /// The hash holding the task: `record` (JSON), and while an update
    /// runs, `lock` and `lock_until`.
    pub task: String,
    /// The owner's sorted set of unfinished task ids, scored by the last
    /// millisecond at which each still counts (its lease's end, or its
    /// expiry if sooner).
    pub live: String,
}

/// The keys of task `id` of `owner`: `{prefix}task:{o:OWNER}:id:ID` and
/// `{prefix}task:{o:OWNER}:live` (OWNER and ID escaped). Another owner's
/// lookup of the same id names another key: it finds nothing.
pub(crate) fn task_keys(prefix: &str, owner: &str, id: &str) -> TaskKeys {
    let base = format!("{prefix}task:{{o:{}}}", escape(owner));
    TaskKeys {
        task: format!("{base}:id:{}", escape(id)),
        live: format!("{base}:live"),
    }
}

/// The hash tag Redis Cluster would hash for `key` (the whole key when it
/// has no non-empty `{…}`), as the cluster specification defines it.
#[cfg(test)]
fn hash_tag(key: &str) -> &str {
    if let Some(open) = key.find('{') {
        if let Some(len) = key[open + 1..].find('}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_is_reversible_in_effect() {
        assert_eq!(escape("s:al{i}ce%"), "s%3Aal%7Bi%7Dce%25");
        assert_eq!(escape(""), "");
        assert_ne!(escape("a:b"), escape("a%3Ab"));
    }

    #[test]
    fn a_handles_keys_share_one_slot() {
        for owner in ["", "s:alice", "s:{x}", "s:}{", "s:%7B"] {
            let keys = handle_keys("toolwire:", "baskets", owner, "bsk_1");
            assert_eq!(hash_tag(&keys.handle), hash_tag(&keys.owned), "{owner}");
            assert!(hash_tag(&keys.handle).starts_with("o:"), "{owner}");
        }
        let keys = handle_keys("toolwire:", "baskets", "s:alice", "bsk_1");
        assert_eq!(keys.handle, "toolwire:h:{o:s%3Aalice}:baskets:id:bsk_1");
        assert_eq!(keys.owned, "toolwire:h:{o:s%3Aalice}:baskets:owned");
    }

    #[test]
    fn a_tasks_keys_share_one_slot() {
        for owner in ["", "s:alice", "s:{x}", "s:}{"] {
            let keys = task_keys("toolwire:", owner, "t{1}");
            assert_eq!(hash_tag(&keys.task), hash_tag(&keys.live), "{owner}");
        }
        let keys = task_keys("toolwire:", "s:alice", "0a1b");
        assert_eq!(keys.task, "toolwire:task:{o:s%3Aalice}:id:0a1b");
        assert_eq!(keys.live, "toolwire:task:{o:s%3Aalice}:live");
        assert_ne!(task_keys("p:", "a", "live").task, keys.live);
    }

    #[test]
    fn owners_and_stores_do_not_collide() {
        let a = handle_keys("p:", "x:owned", "s:a", "1");
        let b = handle_keys("p:", "x", "s:a", "1");
        assert_ne!(a.owned, b.owned);
        assert_ne!(
            handle_keys("p:", "s", "a}", "1").handle,
            handle_keys("p:", "s", "a%7D", "1").handle
        );
    }

    #[test]
    fn prefixes_with_braces_are_refused() {
        assert!(check_prefix("toolwire:").is_ok());
        assert!(check_prefix("").is_ok());
        assert!(check_prefix("app{1}:").is_err());
        assert!(check_prefix("x}").is_err());
        assert_eq!(
            rate_key("toolwire:", "tools\u{0}s:a"),
            "toolwire:rl:tools\u{0}s:a"
        );
    }
}
