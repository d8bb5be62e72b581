//! The per-call policies of `tools/call` that are not routing: rate limits
//! and the one place results are sanitised before they are finished.

use toolwire_protocol::{CallToolResult, Meta, keys};

use crate::context::Principal;
use crate::dispatch::Answer;
use crate::features::registry::RegisteredTool;
use crate::security::audit::{self, Denial};
use crate::server::Server;
use crate::store::rate_limit::retry_secs;

impl Server {
    /// Takes one unit from the caller's tool-call bucket and from the
    /// tool's own bucket; the error is the text for the model.
    pub(crate) async fn check_tool_rate(
        &self,
        tool: &RegisteredTool,
        principal: &Principal,
    ) -> Result<(), String> {
        let store = &self.inner.rate_limits;
        let name = &tool.definition.name;
        let who = principal.key();
        if let Some(limit) = &self.inner.config.tool_call_limit {
            let key = format!("tools\u{0}{who}");
            if let Err(wait) = store.check(&key, limit).await {
                audit::denial(
                    Some(principal),
                    Denial::RateLimited,
                    &format!("tool {name}"),
                );
                return Err(format!(
                    "Rate limit reached for tool calls; retry in {} s",
                    retry_secs(wait)
                ));
            }
        }
        if let Some(limit) = &tool.rate_limit {
            let key = format!("tool\u{0}{name}\u{0}{who}");
            if let Err(wait) = store.check(&key, limit).await {
                audit::denial(
                    Some(principal),
                    Denial::RateLimited,
                    &format!("tool {name}"),
                );
                return Err(format!(
                    "Rate limit reached for tool {name}; retry in {} s",
                    retry_secs(wait)
                ));
            }
        }
        Ok(())
    }

    /// Sanitises a tool result (the server's [`crate::SanitizePolicy`]) and
    /// finishes it: every `tools/call` result leaves through here.
    pub(crate) fn finish_tool(&self, tool: &str, mut result: CallToolResult) -> Answer {
        let policy = &self.inner.config.sanitize;
        policy.apply(tool, &mut result, &|scheme| self.owns_scheme(scheme));
        let meta = result.meta.get_or_insert_with(Meta::new);
        meta.0
            .insert(keys::SERVER_INFO.to_owned(), self.inner.server_info.clone());
        Answer::ToolResult(result)
    }

    /// True when one of the server's resources or templates uses `scheme`.
    fn owns_scheme(&self, scheme: &str) -> bool {
        let has = |uri: &str| {
            uri.split_once(':')
                .is_some_and(|(s, _)| s.eq_ignore_ascii_case(scheme))
        };
        self.inner
            .resources
            .snapshot()
            .iter()
            .any(|slot| has(&slot.item.definition.uri))
            || self
                .inner
                .templates
                .snapshot()
                .iter()
                .any(|slot| has(&slot.item.definition.uri_template))
    }
}
