//! The cache path of a request: serve a fresh cached result, else fetch and
//! store it by its hints, and serve a stale one when the refetch fails.

use toolwire_protocol::{JsonObject, ResultType, code};

use crate::cache::{Freshness, Slot};
use crate::client::Client;
use crate::error::Error;
use crate::options::RequestOptions;
use crate::transport::Era;

/// How long a legacy server's list stays fresh while a subscription
/// watches it (a change notification makes it stale at once).
const WATCHED_LIST_TTL_MS: u64 = 60 * 60 * 1000;

impl Client {
    /// A request whose complete result is cached (lists, discover, reads).
    pub(crate) async fn cached(
        &self,
        method: &str,
        params: JsonObject,
        options: &RequestOptions,
    ) -> Result<(JsonObject, Freshness), Error> {
        let key = params_key(&params);
        let credentials = self.inner.transport.credentials_key();
        let slot = Slot {
            server: &self.inner.server_key,
            credentials: &credentials,
            method,
            params: &key,
        };
        let stale = match self.inner.cache.lookup(slot) {
            Some(hit) if hit.fresh => return Ok((hit.value, Freshness::Cached)),
            Some(hit) => Some(hit.value),
            None => None,
        };
        match self.request(method, &params, options, &[]).await {
            Ok(result) => {
                // Cached results are kept (and served) as trees.
                let result = result
                    .into_object()
                    .map_err(|e| Error::InvalidReply(e.to_string()))?;
                if ResultType::of(&result).ok() == Some(ResultType::Complete) {
                    self.store(slot, &result);
                }
                Ok((result, Freshness::Fetched))
            }
            Err(error) if allows_stale(&error) && stale.is_some() => {
                tracing::warn!(server = %self.inner.name, method, %error, "refetch failed; serving a stale cached result");
                Ok((stale.unwrap_or_default(), Freshness::Stale))
            }
            Err(error) => Err(error),
        }
    }

    /// Caches a complete result by its hints. A legacy server gives none:
    /// its list is kept (for this client's credentials only) while an open
    /// subscription would report that it changed, and not at all otherwise.
    fn store(&self, slot: Slot<'_>, result: &JsonObject) {
        let legacy = self.era() == Some(Era::Legacy);
        if legacy && self.inner.watched.is_watched(slot.method) {
            let ttl = std::time::Duration::from_millis(WATCHED_LIST_TTL_MS);
            let private = toolwire_protocol::CacheScope::Private;
            self.inner.cache.store_for(slot, result, ttl, private);
            return;
        }
        self.inner.cache.store(slot, result);
    }
}

/// The cache key of a request's parameters (without `_meta`).
pub(crate) fn params_key(params: &JsonObject) -> String {
    serde_json::to_string(params).unwrap_or_default()
}

/// Failures after which a stale cached result may be served instead.
fn allows_stale(error: &Error) -> bool {
    matches!(error, Error::Transport(_) | Error::Timeout(_))
        || error.code() == Some(code::INTERNAL_ERROR)
}
