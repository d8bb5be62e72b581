//! The `*/list` methods: one page of what the caller may see.

use std::sync::Arc;

use toolwire_protocol::{CacheScope, ErrorObject, PaginatedRequestParams};

use crate::context::RequestContext;
use crate::features::listing::{ListHead, Listed, Listing};
use crate::features::pagination;
use crate::features::registry::Registry;
use crate::server::Server;

impl Server {
    /// Answers a `*/list` request: the enabled entries of `registry` the
    /// caller may see, one page of them from `params.cursor`, as a finished
    /// result with the list caching hints. When any entry of the list
    /// (visible or not) requires scopes, or the caller is authenticated, the
    /// result depends on the caller and is marked `cacheScope: "private"`.
    pub(crate) fn list<T: Listed + Send + Sync + 'static>(
        &self,
        registry: &Registry<T>,
        params: PaginatedRequestParams,
        cx: &RequestContext,
    ) -> Result<Listing, ErrorObject> {
        let after = match params.cursor.as_deref() {
            Some(cursor) => Some(pagination::decode_cursor(cursor)?),
            None => None,
        };
        let snapshot = registry.snapshot();
        let scoped = snapshot.any_entry(|e| !e.required_scopes().is_empty());
        let visible = snapshot
            .after(after)
            .iter()
            .filter(|slot| slot.enabled && slot.item.permits(cx.principal()));
        let config = &self.inner.config;
        let (items, next_cursor) = pagination::page(visible, config.page_size);
        let mut hint = registry.list_cache().unwrap_or(config.list_cache);
        if scoped || cx.principal().is_authenticated() {
            hint.scope = CacheScope::Private;
        }
        let head = ListHead {
            next_cursor,
            hint,
            server_info: Arc::clone(&self.inner.server_info_text),
        };
        Ok(Listing::new(head, items))
    }
}
