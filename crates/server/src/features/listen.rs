//! The bound on open `subscriptions/listen` requests per principal.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use toolwire_protocol::ErrorObject;

use crate::context::Principal;

/// Counts open subscriptions per principal and enforces the bound.
#[derive(Debug, Default)]
pub(crate) struct SubscriptionCounter {
    open: Mutex<HashMap<String, usize>>,
}

/// Releases one subscription slot when dropped.
pub(crate) struct SubscriptionSlot {
    counter: Arc<SubscriptionCounter>,
    principal: String,
}

impl Drop for SubscriptionSlot {
    fn drop(&mut self) {
        let mut open = self.counter.open.lock().expect("subscription lock");
        if let Some(count) = open.get_mut(&self.principal) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.principal);
            }
        }
    }
}

impl SubscriptionCounter {
    /// Takes a slot for `principal`, unless it holds `limit` already.
    pub fn admit(
        self: &Arc<Self>,
        principal: &Principal,
        limit: usize,
    ) -> Result<SubscriptionSlot, ErrorObject> {
        let key = principal.key().to_owned();
        let mut open = self.open.lock().expect("subscription lock");
        let count = open.entry(key.clone()).or_insert(0);
        if *count >= limit {
            return Err(ErrorObject::invalid_request(format!(
                "too many open subscriptions for this principal (limit {limit}); close one before opening another"
            )));
        }
        *count += 1;
        Ok(SubscriptionSlot {
            counter: Arc::clone(self),
            principal: key,
        })
    }

    /// Open subscriptions across all principals.
    pub fn total(&self) -> usize {
        self.open.lock().expect("subscription lock").values().sum()
    }
}
