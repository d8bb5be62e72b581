//! Rate limits of `tools/call`: the server-wide bucket of each caller and
//! each tool's own, both kept in a [`RateLimitStore`].

use crate::context::Principal;
use crate::security::audit::{self, Denial};
use crate::store::rate_limit::{RateLimit, RateLimitStore, retry_secs};

/// Takes one unit from the caller's tool-call bucket (`server_limit`) and
/// from the tool's own bucket (`tool_limit`); the error is the text for the model.
pub(crate) async fn check_tool_rate(
    store: &dyn RateLimitStore,
    server_limit: Option<&RateLimit>,
    tool_limit: Option<&RateLimit>,
    name: &str,
    principal: &Principal,
) -> Result<(), String> {
    let who = principal.key();
    if let Some(limit) = server_limit {
        if let Err(wait) = check(store, &["tools\u{0}", &who], limit).await {
            audit::denial(
                Some(principal),
                Denial::RateLimited,
                &format!("tool {name}"),
            );
            return Err(refusal(store, "tool calls", wait));
        }
    }
    if let Some(limit) = tool_limit {
        if let Err(wait) = check(store, &["tool\u{0}", name, "\u{0}", &who], limit).await {
            audit::denial(
                Some(principal),
                Denial::RateLimited,
                &format!("tool {name}"),
            );
            return Err(refusal(store, &format!("tool {name}"), wait));
        }
    }
    Ok(())
}

thread_local! {
    /// A key put together for a store that answers at once.
    static KEY: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Takes one unit from the bucket whose key is `parts` joined: put together
/// in a buffer kept per thread when the store answers at once, else as a
/// string of its own for the store's future.
async fn check(
    store: &dyn RateLimitStore,
    parts: &[&str],
    limit: &RateLimit,
) -> Result<(), std::time::Duration> {
    let ready = KEY.with_borrow_mut(|key| {
        key.clear();
        parts.iter().for_each(|part| key.push_str(part));
        store.check_ready(key, limit)
    });
    match ready {
        Some(outcome) => outcome,
        None => store.check(&parts.concat(), limit).await,
    }
}

/// The text of a refusal: a limit reached, or a store that cannot tell.
fn refusal(store: &dyn RateLimitStore, what: &str, wait: std::time::Duration) -> String {
    let secs = retry_secs(wait);
    match store.unavailable() {
        Some(why) => format!("Rate limits cannot be checked ({why}); retry in {secs} s"),
        None => format!("Rate limit reached for {what}; retry in {secs} s"),
    }
}
