//! Notifications shared by every feature: progress, cancellation, log
//! messages and list changes.

use serde::{Deserialize, Serialize};

use crate::jsonrpc::RequestId;
use crate::meta::{Meta, ProgressToken};

/// Method name of `notifications/progress`.
pub const METHOD_PROGRESS: &str = "notifications/progress";
/// Method name of `notifications/cancelled`.
pub const METHOD_CANCELLED: &str = "notifications/cancelled";
/// Method name of `notifications/message` (a log message).
pub const METHOD_LOGGING_MESSAGE: &str = "notifications/message";
/// Method name of `notifications/tools/list_changed`.
pub const METHOD_TOOL_LIST_CHANGED: &str = "notifications/tools/list_changed";

/// Parameters of `notifications/progress`.
///
/// ```
/// use toolwire_protocol::{ProgressNotificationParams, RequestId};
/// let p = ProgressNotificationParams::new(RequestId::from("t"), 50.0).with_total(100.0);
/// assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"progressToken":"t","progress":50,"total":100}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token from the request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far; increases with every notification.
    #[serde(serialize_with = "crate::number::f64")]
    pub progress: f64,
    /// The total, if known.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::opt_f64"
    )]
    pub total: Option<f64>,
    /// A human-readable description of the current step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ProgressNotificationParams {
    /// Progress for `token`.
    pub fn new(progress_token: ProgressToken, progress: f64) -> Self {
        ProgressNotificationParams {
            progress_token,
            progress,
            total: None,
            message: None,
            meta: None,
        }
    }

    /// Sets `total`.
    pub fn with_total(mut self, total: f64) -> Self {
        self.total = Some(total);
        self
    }

    /// Sets `message`.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// Parameters of `notifications/cancelled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The id of the request to cancel.
    pub request_id: RequestId,
    /// Why, for logs or display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl CancelledNotificationParams {
    /// Cancels `request_id`.
    pub fn new(request_id: RequestId) -> Self {
        CancelledNotificationParams {
            request_id,
            reason: None,
            meta: None,
        }
    }
}

/// Parameters of a notification that carries nothing but `_meta`
/// (the `list_changed` notifications).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationParams {
    /// Metadata (carries `subscriptionId` on subscription streams).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}
