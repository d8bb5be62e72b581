//! `resources/read`: a static resource first, then the first matching
//! template, run as a round that may ask for input.

use std::sync::Arc;

use serde_json::json;
use toolwire_protocol::{ErrorObject, JsonObject, ReadResourceRequestParams, ReadResourceResult};

use super::round::{Finished, What};
use crate::context::RequestContext;
use crate::context::mrtr::RoundKey;
use crate::features::cache::CacheHint;
use crate::features::listing::Listed;
use crate::features::resources::{ErasedReadHandler, ReadRequest};
use crate::security::audit;
use crate::security::sanitize::SanitizeReport;
use crate::server::Server;

impl Server {
    /// Finds what serves `uri`: a static resource first, then the first
    /// matching template. The flag says whether it requires scopes.
    fn resolve(
        &self,
        uri: &str,
        cx: &RequestContext,
    ) -> Option<(ErasedReadHandler, ReadRequest, Option<CacheHint>, bool)> {
        if let Some(resource) = self
            .inner
            .resources
            .get(uri)
            .filter(|r| r.permits(cx.principal()))
        {
            let request = ReadRequest {
                uri: uri.to_owned(),
                variables: Default::default(),
            };
            let scoped = !resource.required_scopes.is_empty();
            return Some((
                Arc::clone(&resource.handler),
                request,
                resource.cache,
                scoped,
            ));
        }
        self.inner.templates.enabled().iter().find_map(|template| {
            let variables = template
                .matches(uri)
                .filter(|_| template.permits(cx.principal()))?;
            let request = ReadRequest {
                uri: uri.to_owned(),
                variables,
            };
            let scoped = !template.required_scopes.is_empty();
            Some((
                Arc::clone(&template.handler),
                request,
                template.cache,
                scoped,
            ))
        })
    }

    pub(crate) async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        cx: RequestContext,
    ) -> Result<JsonObject, ErrorObject> {
        let not_found = || {
            ErrorObject::invalid_params("Resource not found").with_data(json!({"uri": params.uri}))
        };
        let (handler, request, cache, scoped) =
            self.resolve(&params.uri, &cx).ok_or_else(not_found)?;
        // What only some callers may read must not sit in a shared cache.
        let private = scoped || cx.principal().is_authenticated();
        let principal = cx.principal().key().to_owned();
        let uri = json!(params.uri);
        let key = RoundKey {
            method: "resources/read",
            principal: &principal,
            salient: &[("uri", &uri)],
        };
        let state = params.request_state.as_deref();
        let run = move |cx| handler(request, cx);
        let what = What("Reading", &params.uri);
        let who = audit::listening().then(|| cx.principal().clone());
        match self
            .run_round(&key, state, params.input_responses.as_ref(), cx, &what, run)
            .await?
        {
            Finished::Value(contents) if contents.is_empty() => Err(not_found()),
            Finished::Value(mut contents) => {
                // What reaches the model: every text content.
                let policy = &self.inner.config.sanitize;
                let mut report = SanitizeReport::default();
                policy.clean_contents(&mut contents, &mut report);
                audit::sanitized(who.as_ref(), "resources/read", &params.uri, &report);
                let mut hint = cache.unwrap_or(self.inner.config.read_cache);
                if private {
                    hint.scope = toolwire_protocol::CacheScope::Private;
                }
                let mut result = self.finish(ReadResourceResult {
                    contents,
                    ttl_ms: hint.ttl_ms,
                    cache_scope: hint.scope,
                    ..Default::default()
                });
                policy.flag_object(&mut result, &report);
                Ok(result)
            }
            Finished::ExecutionError(message) => {
                Err(ErrorObject::invalid_params(message).with_data(json!({"uri": params.uri})))
            }
            Finished::InputRequired(result) => Ok(result),
        }
    }
}
