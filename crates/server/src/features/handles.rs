//! State handles for stateful tools: a creating tool mints an opaque id
//! (`bsk_…`), later calls pass it back as an ordinary argument.
//!
//! Each handle is bound to the principal that created it: another principal
//! presenting it gets exactly the "not found" answer an unknown id gets, so
//! possession of a handle is never authorisation. Ids carry 128 bits from
//! the operating system's CSPRNG, and a handle expires after an idle time
//! (every use restarts the clock). Without authentication every caller is
//! the same anonymous principal, and a handle is then a bearer secret: its
//! entropy and its expiry are what protect it.
//!
//! ```
//! use std::time::Duration;
//! use toolwire_server::{Handles, ToolBuilder};
//! #[derive(Clone, Default)]
//! struct Basket { items: Vec<String> }
//! let baskets: Handles<Basket> = Handles::new("bsk", "basket")
//!     .idle_timeout(Duration::from_secs(30 * 60))
//!     .created_by("create_basket");
//! assert_eq!(baskets.retention_policy(), "Baskets expire after 30 minutes of inactivity.");
//! let tool = baskets.describe(ToolBuilder::new("create_basket").description("Creates a basket."));
//! assert_eq!(
//!     tool.definition().description.as_deref(),
//!     Some("Creates a basket. Baskets expire after 30 minutes of inactivity.")
//! );
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rand::TryRngCore;

use crate::context::RequestContext;
use crate::context::output::ToolError;
use crate::features::tool::ToolBuilder;
use crate::store::handles::{HandleStore, HandleStoreError, InMemoryHandles};

#[derive(Debug, Clone)]
struct HandleConfig {
    prefix: String,
    noun: String,
    plural: String,
    idle: Duration,
    created_by: Option<String>,
    max_per_principal: usize,
}

/// The default idle time before a handle expires: 30 minutes.
pub const DEFAULT_HANDLE_IDLE: Duration = Duration::from_secs(30 * 60);

/// The default number of live handles one principal may hold: 100.
pub const DEFAULT_HANDLES_PER_PRINCIPAL: usize = 100;

/// Longest id echoed back in an error message.
const ECHO_LIMIT: usize = 64;

/// Handles of one kind (baskets, browser contexts, transactions): mints
/// ids, binds them to the caller, and answers unknown, foreign or expired
/// ids with a tool execution error that says how to recover. Cheap to clone.
pub struct Handles<T> {
    config: Arc<HandleConfig>,
    store: Arc<dyn HandleStore<T>>,
}

impl<T> Clone for Handles<T> {
    fn clone(&self) -> Self {
        Handles {
            config: Arc::clone(&self.config),
            store: Arc::clone(&self.store),
        }
    }
}

impl<T> fmt::Debug for Handles<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handles")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<T: Send + 'static> Handles<T> {
    /// Handles whose ids start with `prefix` and `_` (e.g. `bsk`), called
    /// `noun` in messages (e.g. `basket`); kept in memory, expiring after
    /// 30 minutes of inactivity, at most 100 per principal.
    pub fn new(prefix: impl Into<String>, noun: impl Into<String>) -> Self {
        let noun = noun.into();
        Handles {
            config: Arc::new(HandleConfig {
                prefix: prefix.into(),
                plural: format!("{noun}s"),
                noun,
                idle: DEFAULT_HANDLE_IDLE,
                created_by: None,
                max_per_principal: DEFAULT_HANDLES_PER_PRINCIPAL,
            }),
            store: Arc::new(InMemoryHandles::<T>::new()),
        }
    }

    fn edit(mut self, change: impl FnOnce(&mut HandleConfig)) -> Self {
        change(Arc::make_mut(&mut self.config));
        self
    }

    /// How long a handle lives without use (default 30 minutes).
    pub fn idle_timeout(self, idle: Duration) -> Self {
        self.edit(|c| c.idle = idle)
    }

    /// The tool that creates these handles, named in "not found" errors.
    pub fn created_by(self, tool: impl Into<String>) -> Self {
        self.edit(|c| c.created_by = Some(tool.into()))
    }

    /// The plural of the noun, when it is not the noun plus `s`.
    pub fn plural(self, plural: impl Into<String>) -> Self {
        self.edit(|c| c.plural = plural.into())
    }

    /// Live handles one principal may hold (default 100).
    pub fn max_per_principal(self, limit: usize) -> Self {
        self.edit(|c| c.max_per_principal = limit)
    }

    /// Keeps handles in `store` instead of this process's memory.
    pub fn store(mut self, store: Arc<dyn HandleStore<T>>) -> Self {
        self.store = store;
        self
    }

    /// The retention policy as a sentence, e.g. "Baskets expire after 30
    /// minutes of inactivity."
    pub fn retention_policy(&self) -> String {
        let c = &self.config;
        format!(
            "{} expire after {} of inactivity.",
            capitalise(&c.plural),
            human_duration(c.idle)
        )
    }

    /// Appends the retention policy to the creating tool's description, so
    /// the model sees it when deciding to create state.
    pub fn describe(&self, mut tool: ToolBuilder) -> ToolBuilder {
        let policy = self.retention_policy();
        tool.definition.description = Some(match tool.definition.description.take() {
            Some(text) if !text.trim().is_empty() => format!("{} {policy}", text.trim_end()),
            _ => policy,
        });
        tool
    }

    /// The tool execution error for an unknown, foreign or expired `id`.
    pub fn not_found(&self, id: &str) -> ToolError {
        let c = &self.config;
        let shown = match id.char_indices().nth(ECHO_LIMIT) {
            Some((end, _)) => format!("{}…", &id[..end]),
            None => id.to_owned(),
        };
        let recover = match &c.created_by {
            Some(tool) => format!("create a new one with {tool}"),
            None => "create a new one".to_owned(),
        };
        ToolError::new(format!(
            "{} {shown} was not found or has expired ({} expire after {} of inactivity); {recover}",
            capitalise(&c.noun),
            c.plural,
            human_duration(c.idle)
        ))
    }

    /// Mints a new handle for the caller holding `value` and returns its id.
    pub async fn create(&self, cx: &RequestContext, value: T) -> Result<String, ToolError> {
        let c = &self.config;
        let id = mint_id(&c.prefix);
        let owner = cx.principal().key();
        self.store
            .insert(&id, &owner, value, c.idle, c.max_per_principal)
            .await
            .map_err(|e| match e {
                HandleStoreError::Full { limit } => ToolError::new(format!(
                    "Too many {} are open for you (limit {limit}); reuse one you have, or wait for one to expire ({} expire after {} of inactivity)",
                    c.plural,
                    c.plural,
                    human_duration(c.idle)
                )),
                other => unavailable(other),
            })?;
        Ok(id)
    }

    /// Runs `change` on the caller's handle `id` and returns what it returns;
    /// an unknown, foreign or expired id is a tool execution error.
    /// `change` runs under the store's lock: keep it short, never block.
    pub async fn with<R, F>(&self, cx: &RequestContext, id: &str, change: F) -> Result<R, ToolError>
    where
        F: FnOnce(&mut T) -> R + Send,
        R: Send,
    {
        if !self.well_formed(id) {
            return Err(self.not_found(id));
        }
        let mut out = None;
        let ran = self
            .store
            .modify(
                id,
                &cx.principal().key(),
                Box::new(|value: &mut T| out = Some(change(value))),
            )
            .await
            .map_err(unavailable)?;
        match out {
            Some(out) if ran => Ok(out),
            _ => Err(self.not_found(id)),
        }
    }

    /// A copy of the caller's handle `id`.
    pub async fn get(&self, cx: &RequestContext, id: &str) -> Result<T, ToolError>
    where
        T: Clone,
    {
        self.with(cx, id, |value| value.clone()).await
    }

    /// Ends the caller's handle `id`.
    pub async fn remove(&self, cx: &RequestContext, id: &str) -> Result<(), ToolError> {
        if !self.well_formed(id) {
            return Err(self.not_found(id));
        }
        match self.store.remove(id, &cx.principal().key()).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(self.not_found(id)),
            Err(e) => Err(unavailable(e)),
        }
    }

    fn well_formed(&self, id: &str) -> bool {
        id.strip_prefix(self.config.prefix.as_str())
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(|body| body.len() == ID_CHARS && body.bytes().all(is_base32))
    }
}

fn unavailable(error: HandleStoreError) -> ToolError {
    tracing::error!(%error, "handle store failed");
    ToolError::new("The server could not reach its state store; try again shortly")
}

/// Characters of the random part: 128 bits in base32.
const ID_CHARS: usize = 26;

const BASE32: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

fn is_base32(b: u8) -> bool {
    b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b)
}

/// `prefix_` and 128 random bits from the OS CSPRNG, lowercase base32.
fn mint_id(prefix: &str) -> String {
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .expect("the operating system's random number generator works");
    let value = u128::from_be_bytes(bytes);
    let mut id = String::with_capacity(prefix.len() + 1 + ID_CHARS);
    id.push_str(prefix);
    id.push('_');
    for i in (0..ID_CHARS).rev() {
        let digit = ((value >> (i * 5)) & 31) as usize;
        id.push(char::from(BASE32[digit]));
    }
    id
}

fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// "30 minutes", "1 hour", "90 seconds", "250 milliseconds".
pub(crate) fn human_duration(d: Duration) -> String {
    let plural = |n: u128, unit: &str| format!("{n} {unit}{}", if n == 1 { "" } else { "s" });
    let ms = d.as_millis();
    let secs = d.as_secs();
    if ms % 1000 != 0 || secs == 0 {
        return plural(ms, "millisecond");
    }
    let secs = u128::from(secs);
    for (unit, size) in [("day", 86_400), ("hour", 3_600), ("minute", 60)] {
        if secs % size == 0 {
            return plural(secs / size, unit);
        }
    }
    plural(secs, "second")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_and_random() {
        let a = mint_id("bsk");
        let b = mint_id("bsk");
        assert_ne!(a, b);
        assert_eq!(a.len(), 4 + ID_CHARS);
        assert!(a.starts_with("bsk_"));
        assert!(a[4..].bytes().all(is_base32), "{a}");
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human_duration(Duration::from_secs(1800)), "30 minutes");
        assert_eq!(human_duration(Duration::from_secs(3600)), "1 hour");
        assert_eq!(human_duration(Duration::from_secs(86_400 * 2)), "2 days");
        assert_eq!(human_duration(Duration::from_secs(90)), "90 seconds");
        assert_eq!(human_duration(Duration::from_secs(1)), "1 second");
        assert_eq!(
            human_duration(Duration::from_millis(250)),
            "250 milliseconds"
        );
    }
}
