//! The caching hints (`ttlMs`, `cacheScope`) of the gateway's own lists,
//! merged from its upstreams' so that a downstream client never keeps a
//! list longer, or shares it more widely, than an upstream allowed: the
//! shortest `ttlMs` and the most restrictive `cacheScope` (`private` over
//! `public`) of the upstreams served now. Upstreams that are not served (left
//! out, or lazy and not started yet) do not count; with none counting, the
//! server's own hints apply.

use toolwire_client::CacheHints;
use toolwire_server::{CacheHint, Server};

/// The hints of one upstream's lists (`None`: not listed from it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ListHints {
    pub(crate) tools: Option<CacheHints>,
    pub(crate) prompts: Option<CacheHints>,
    pub(crate) resources: Option<CacheHints>,
    pub(crate) templates: Option<CacheHints>,
}

impl ListHints {
    /// The most cautious of every upstream's, list by list.
    pub(crate) fn merged<'a>(all: impl IntoIterator<Item = &'a ListHints>) -> ListHints {
        let strictest = |a: Option<CacheHints>, b: Option<CacheHints>| match (a, b) {
            (Some(a), Some(b)) => Some(a.strictest(b)),
            (a, b) => a.or(b),
        };
        all.into_iter()
            .fold(ListHints::default(), |merged, hints| ListHints {
                tools: strictest(merged.tools, hints.tools),
                prompts: strictest(merged.prompts, hints.prompts),
                resources: strictest(merged.resources, hints.resources),
                templates: strictest(merged.templates, hints.templates),
            })
    }

    /// Puts these hints on `server`'s list results.
    pub(crate) fn publish(&self, server: &Server) {
        let hint = |hints: Option<CacheHints>| {
            hints.map(|h| CacheHint {
                ttl_ms: h.ttl_ms,
                scope: h.scope,
            })
        };
        server.set_tools_list_cache(hint(self.tools));
        server.set_prompts_list_cache(hint(self.prompts));
        server.set_resources_list_cache(hint(self.resources));
        server.set_resource_templates_list_cache(hint(self.templates));
    }
}
