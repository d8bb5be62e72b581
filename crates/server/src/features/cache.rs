//! Caching hints (`ttlMs`, `cacheScope`) of list, discover and read results.

use toolwire_protocol::CacheScope;

/// Caching hints for one kind of result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    /// Freshness in milliseconds.
    pub ttl_ms: u64,
    /// Who may cache.
    pub scope: CacheScope,
}
