//! Resources: `resources/list`, `resources/templates/list`, `resources/read`
//! and their notifications.

use serde::{Deserialize, Serialize};

use crate::capabilities::Icon;
use crate::content::{Annotations, Resource, ResourceContents};
use crate::meta::Meta;
use crate::mrtr::InputResponses;
use crate::result::{CacheScope, ResultType};

/// Method name of `resources/list`.
pub const METHOD_LIST_RESOURCES: &str = "resources/list";
/// Method name of `resources/templates/list`.
pub const METHOD_LIST_RESOURCE_TEMPLATES: &str = "resources/templates/list";
/// Method name of `resources/read`.
pub const METHOD_READ_RESOURCE: &str = "resources/read";
/// Method name of `notifications/resources/updated`.
pub const METHOD_RESOURCE_UPDATED: &str = "notifications/resources/updated";
/// Method name of `notifications/resources/list_changed`.
pub const METHOD_RESOURCE_LIST_CHANGED: &str = "notifications/resources/list_changed";

/// A family of resources described by an RFC 6570 URI template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resources are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type of every matching resource, if they share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

list_result! {
    /// The result of `resources/list`.
    pub struct ListResourcesResult {
        /// The resources on this page.
        pub resources: Vec<Resource>,
    }
}

list_result! {
    /// The result of `resources/templates/list`.
    pub struct ListResourceTemplatesResult {
        /// The templates on this page.
        pub resource_templates: Vec<ResourceTemplate>,
    }
}

/// Parameters of `resources/read`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceRequestParams {
    /// The resource to read.
    pub uri: String,
    /// Answers to the input requests of a previous round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The opaque state of a previous round, echoed byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The (complete) result of `resources/read`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// Always `complete` (an `input_required` answer is an `InputRequiredResult`).
    #[serde(default)]
    pub result_type: ResultType,
    /// The contents: one entry, or several for a resource with sub-resources.
    pub contents: Vec<ResourceContents>,
    /// How long the contents may be considered fresh (0 when a peer omits it).
    #[serde(default)]
    pub ttl_ms: u64,
    /// Who may cache the contents (`private` when a peer omits it).
    #[serde(default)]
    pub cache_scope: CacheScope,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Parameters of `notifications/resources/updated`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceUpdatedNotificationParams {
    /// The resource that changed (possibly a sub-resource of the one subscribed to).
    pub uri: String,
    /// Metadata (carries `subscriptionId`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}
