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

impl crate::server::Server {
    /// Sets the caching hints of `tools/list` results while the server runs,
    /// in place of [`crate::ServerBuilder::list_cache`]'s (`None`: those
    /// again). A list that depends on scopes or on the caller is still
    /// marked `private`.
    pub fn set_tools_list_cache(&self, hint: Option<CacheHint>) {
        self.inner.tools.set_list_cache(hint);
    }

    /// [`Server::set_tools_list_cache`](crate::Server::set_tools_list_cache)
    /// for `prompts/list`.
    pub fn set_prompts_list_cache(&self, hint: Option<CacheHint>) {
        self.inner.prompts.set_list_cache(hint);
    }

    /// [`Server::set_tools_list_cache`](crate::Server::set_tools_list_cache)
    /// for `resources/list`.
    pub fn set_resources_list_cache(&self, hint: Option<CacheHint>) {
        self.inner.resources.set_list_cache(hint);
    }
}
