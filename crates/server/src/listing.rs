//! The `*/list` methods (tools, prompts, resources, resource templates):
//! one page of what the caller may see, with the list caching hints.

use serde::Serialize;
use serde_json::Value;
use toolwire_protocol::{
    CacheScope, ErrorObject, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams,
};

use crate::context::{Principal, RequestContext};
use crate::pagination;
use crate::prompts::RegisteredPrompt;
use crate::registry::{Named, RegisteredTool, Registry};
use crate::resources::{RegisteredResource, RegisteredTemplate};
use crate::server::{CacheHint, Server};

/// A registry entry that a `*/list` method shows to the callers it permits.
pub(crate) trait Listed: Named {
    /// The result of the method that lists this kind of entry.
    type List: ListResult;

    /// Scopes a caller must hold to see and use the entry.
    fn required_scopes(&self) -> &[String];

    /// The entry's definition, as listed.
    fn listed(&self) -> Value;

    /// True when `principal` may see and use the entry.
    fn permits(&self, principal: &Principal) -> bool {
        self.required_scopes()
            .iter()
            .all(|s| principal.has_scope(s))
    }
}

/// The result of a `*/list` method.
pub(crate) trait ListResult: Serialize {
    /// The field that holds the entries, as sent (`tools`, `resourceTemplates`, ...).
    const ITEMS: &'static str;

    /// The result with no entries, and the page's cursor and caching hints.
    fn without_items(next_cursor: Option<String>, hint: CacheHint) -> Self;
}

macro_rules! list_results {
    ($($result:ident: $items:literal),* $(,)?) => {$(
        impl ListResult for $result {
            const ITEMS: &'static str = $items;

            fn without_items(next_cursor: Option<String>, hint: CacheHint) -> Self {
                $result {
                    next_cursor,
                    ttl_ms: hint.ttl_ms,
                    cache_scope: hint.scope,
                    ..Default::default()
                }
            }
        }
    )*};
}

list_results! {
    ListToolsResult: "tools",
    ListPromptsResult: "prompts",
    ListResourcesResult: "resources",
    ListResourceTemplatesResult: "resourceTemplates",
}

impl Listed for RegisteredTool {
    type List = ListToolsResult;

    fn required_scopes(&self) -> &[String] {
        &self.required_scopes
    }

    /// Made once, when the tool was registered (the hot path).
    fn listed(&self) -> Value {
        self.listed.clone()
    }
}

/// Implements [`Listed`] for a registered entry from its `definition` and
/// `required_scopes` fields.
macro_rules! listed_definitions {
    ($($entry:ident => $list:ident),* $(,)?) => {$(
        impl Listed for $entry {
            type List = $list;

            fn required_scopes(&self) -> &[String] {
                &self.required_scopes
            }

            fn listed(&self) -> Value {
                serde_json::to_value(&self.definition).unwrap_or_default()
            }
        }
    )*};
}

listed_definitions! {
    RegisteredPrompt => ListPromptsResult,
    RegisteredResource => ListResourcesResult,
    RegisteredTemplate => ListResourceTemplatesResult,
}

impl Server {
    /// Answers a `*/list` request: the enabled entries of `registry` the
    /// caller may see, one page of them from `params.cursor`, as a finished
    /// result with the list caching hints. When any entry of the list
    /// (visible or not) requires scopes, or the caller is authenticated, the
    /// result depends on the caller and is marked `cacheScope: "private"`.
    pub(crate) fn list<T: Listed>(
        &self,
        registry: &Registry<T>,
        params: PaginatedRequestParams,
        cx: &RequestContext,
    ) -> Result<JsonObject, ErrorObject> {
        let offset = match params.cursor.as_deref() {
            Some(cursor) => pagination::decode_cursor(cursor)?,
            None => 0,
        };
        let enabled = registry.enabled();
        let scoped = enabled.iter().any(|e| !e.required_scopes().is_empty());
        let visible: Vec<&T> = enabled
            .iter()
            .filter(|e| e.permits(cx.principal()))
            .map(|e| &**e)
            .collect();
        let config = &self.inner.config;
        let (items, next_cursor) = pagination::page(&visible, offset, config.page_size);
        let mut hint = config.list_cache;
        if scoped || cx.principal().is_authenticated() {
            hint.scope = CacheScope::Private;
        }
        let mut result = self.finish(T::List::without_items(next_cursor, hint));
        // The entries go in last, each as listed (a tool's definition was
        // turned into JSON once, when it was registered); the field keeps
        // its place among the others.
        let items = items.iter().map(|e| e.listed()).collect();
        result.insert(T::List::ITEMS.to_owned(), Value::Array(items));
        Ok(result)
    }
}
