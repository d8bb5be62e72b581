//! Approving a tool withheld by its pin, for `toolwire gateway approve` and
//! the web console alike: its definition as the upstream serves it now is
//! pinned, the approval recorded in the audit log, and the tool served at
//! once.

use crate::gateway::Gateway;
use crate::pin::{canonical_definition, fingerprint};

/// A tool approved: what was pinned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// The upstream's name.
    pub upstream: String,
    /// The tool's name on the upstream.
    pub tool: String,
    /// Hex SHA-256 of the definition pinned now.
    pub sha256: String,
    /// Hex SHA-256 of the definition pinned before (`None`: the tool was
    /// not pinned yet).
    pub previous_sha256: Option<String>,
}

/// Why a tool could not be approved.
#[derive(Debug, thiserror::Error)]
pub enum ApproveError {
    /// The configuration names no lock file: nothing is pinned.
    #[error(
        "the configuration names no lock file: add lock = \"toolwire-gateway.lock\" to [gateway]"
    )]
    NoLockFile,
    /// The tool is not withheld now (served, unknown, or its upstream is
    /// gone).
    #[error("{upstream}/{tool} is not withheld by its pin: there is nothing to approve")]
    NotWithheld {
        /// The upstream's name.
        upstream: String,
        /// The tool's name on the upstream.
        tool: String,
    },
    /// The lock file could not be written; nothing was pinned.
    #[error("cannot write the lock file: {0}")]
    Write(#[source] std::io::Error),
}

impl Gateway {
    /// Pins the definition of `tool` of `upstream`, withheld now by its pin
    /// (changed since it was pinned, or not pinned yet in strict mode), as
    /// the upstream serves it now; records an `approve` event naming
    /// `principal` in the audit log (when there is one); then lists that
    /// upstream again, so that the tool is served at once.
    pub async fn approve(
        &self,
        upstream: &str,
        tool: &str,
        principal: &str,
    ) -> Result<Approval, ApproveError> {
        let pins = self.inner.pins.clone().ok_or(ApproveError::NoLockFile)?;
        let withheld = self.inner.lock().withheld_tool(upstream, tool);
        let (index, definition) = withheld.ok_or_else(|| ApproveError::NotWithheld {
            upstream: upstream.to_owned(),
            tool: tool.to_owned(),
        })?;
        let previous = pins
            .approve(upstream, &definition)
            .map_err(ApproveError::Write)?;
        let approval = Approval {
            upstream: upstream.to_owned(),
            tool: tool.to_owned(),
            sha256: fingerprint(&canonical_definition(&definition)),
            previous_sha256: previous.map(|pin| pin.sha256),
        };
        tracing::info!(upstream, tool, principal, "tool approved");
        self.record(&approval, principal);
        let listing = self.list(index).await;
        for collision in self.apply(index, listing) {
            let error = self.inner.lock().collision_error(collision);
            tracing::warn!("{error}; the later tool is withheld");
        }
        Ok(approval)
    }

    /// Writes the `approve` event of `approval` by `principal`.
    fn record(&self, approval: &Approval, principal: &str) {
        let Some(audit) = &self.inner.audit else {
            return;
        };
        let mut fields = serde_json::Map::new();
        fields.insert("principal".into(), principal.into());
        fields.insert("upstream".into(), approval.upstream.clone().into());
        fields.insert("upstream_tool".into(), approval.tool.clone().into());
        fields.insert("sha256".into(), approval.sha256.clone().into());
        fields.insert(
            "previous_sha256".into(),
            approval.previous_sha256.clone().into(),
        );
        audit.write_event("approve", fields);
    }
}
