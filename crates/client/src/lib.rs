//! The toolwire client SDK.

mod cache;
mod client;
mod digest;
pub mod error;
mod features;
mod group;
pub mod handlers;
mod headers;
mod listen;
mod mrtr;
mod options;
mod safety;
mod tools;
pub mod transport;

pub use cache::{Cache, Freshness};
pub use client::{Client, ClientBuilder, Fetched};
pub use error::{Error, Result, TransportError};
pub use group::{ClientGroup, ClientGroupBuilder, GroupTool, GroupToolList, MAX_NAME_LEN};
pub use listen::{ListenEvent, Subscription};
pub use options::{NotificationSink, RequestNotification, RequestOptions};
pub use safety::{
    AllowAll, Approval, ApprovalHook, ApprovalRequest, AuditHook, AuditRecord, ToolInfo,
};
pub use tools::{RejectedTool, ToolList};
