//! `subscriptions/listen`: a long-lived stream of list-changed and
//! resource-updated notifications.

use serde::{Deserialize, Serialize};

use crate::jsonrpc::RequestId;
use crate::meta::Meta;
use crate::result::ResultType;

/// Method name of `subscriptions/listen`.
pub const METHOD_SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// Method name of `notifications/subscriptions/acknowledged`.
pub const METHOD_SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// Which notifications a listener wants (request) or will get (acknowledgement).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these resource URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// `notifications/tasks` for these task ids (the Tasks extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
}

/// Parameters of `subscriptions/listen`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsListenRequestParams {
    /// The notifications wanted.
    pub notifications: SubscriptionFilter,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Parameters of `notifications/subscriptions/acknowledged`, the first message
/// of every subscription stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// The subset of the requested notifications the server will send.
    pub notifications: SubscriptionFilter,
    /// Metadata (carries `subscriptionId`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The result of `subscriptions/listen`, sent when the server ends the subscription.
///
/// Its `_meta` is required and carries `io.modelcontextprotocol/subscriptionId`.
///
/// ```
/// use toolwire_protocol::{RequestId, SubscriptionsListenResult};
/// let r = SubscriptionsListenResult::new(&RequestId::from("listen-1"));
/// assert_eq!(r.subscription_id(), Some(RequestId::from("listen-1")));
/// let json = serde_json::to_value(&r).unwrap();
/// assert_eq!(json["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenResult {
    /// Always `complete`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata: `subscriptionId` (required) and `serverInfo`.
    #[serde(rename = "_meta")]
    pub meta: Meta,
}

impl SubscriptionsListenResult {
    /// The result for the subscription opened by the request with id `subscription_id`.
    pub fn new(subscription_id: &RequestId) -> Self {
        let mut meta = Meta::new();
        meta.set_subscription_id(subscription_id);
        SubscriptionsListenResult {
            result_type: ResultType::Complete,
            meta,
        }
    }

    /// The subscription id in `_meta`, when present and well-formed.
    pub fn subscription_id(&self) -> Option<RequestId> {
        self.meta.subscription_id().and_then(Result::ok)
    }
}
