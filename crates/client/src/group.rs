//! Aggregation: one [`ClientGroup`] over several servers, whose tools are
//! listed under prefixed names and whose calls are routed back to the right
//! server with the original name.

use std::collections::{HashMap, HashSet};
use std::sync::RwLock;

use serde::Serialize;
use toolwire_protocol::CallToolResult;

use crate::client::{Client, read, write};
use crate::digest::short_hex;
use crate::error::Error;
use crate::options::RequestOptions;
use crate::safety::ToolInfo;

/// The longest tool name the group exposes.
pub const MAX_NAME_LEN: usize = 128;

/// A tool of one member, under the name the group exposes.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupTool {
    /// The exposed name, e.g. `github_search`: unique in the group, at most 128
    /// characters of `A-Z a-z 0-9 _ - .`.
    pub name: String,
    /// The member it belongs to.
    pub server: String,
    /// The definition, under its original name.
    pub info: ToolInfo,
}

/// The tools of every member that answered.
#[derive(Debug)]
pub struct GroupToolList {
    /// The tools, member by member in the order they were added.
    pub tools: Vec<GroupTool>,
    /// Members whose listing failed, with the error.
    pub failures: Vec<(String, Error)>,
}

/// Several clients behind one tool namespace.
///
/// ```
/// use toolwire_client::{Client, ClientGroup, transport::HttpTransport};
/// let github = Client::builder(HttpTransport::new("http://127.0.0.1:1/mcp").unwrap()).build();
/// let files = Client::builder(HttpTransport::new("http://127.0.0.1:2/mcp").unwrap()).build();
/// let group = ClientGroup::builder()
///     .client("github", github)
///     .client_with_prefix("files", "fs", files)
///     .separator("__")
///     .build();
/// assert_eq!(group.member_names(), ["github", "files"]);
/// ```
#[derive(Debug)]
pub struct ClientGroup {
    members: Vec<Member>,
    separator: String,
    routes: RwLock<HashMap<String, (usize, String)>>,
}

#[derive(Debug)]
struct Member {
    name: String,
    prefix: String,
    client: Client,
}

/// Configures a [`ClientGroup`].
#[derive(Debug, Default)]
pub struct ClientGroupBuilder {
    members: Vec<Member>,
    separator: Option<String>,
}

impl ClientGroup {
    /// Starts a group.
    pub fn builder() -> ClientGroupBuilder {
        ClientGroupBuilder::default()
    }

    /// The members' names, in order.
    pub fn member_names(&self) -> Vec<&str> {
        self.members.iter().map(|m| m.name.as_str()).collect()
    }

    /// The member named `name`.
    pub fn client(&self, name: &str) -> Option<&Client> {
        self.members
            .iter()
            .find(|m| m.name == name)
            .map(|m| &m.client)
    }

    /// Lists every member's tools under exposed names (`<prefix><sep><tool>`,
    /// truncated and disambiguated with a short hash when too long or taken).
    pub async fn list_tools(&self) -> GroupToolList {
        let listings =
            futures::future::join_all(self.members.iter().map(|m| m.client.list_tools())).await;
        let mut taken = HashSet::new();
        let mut routes = HashMap::new();
        let mut list = GroupToolList {
            tools: Vec::new(),
            failures: Vec::new(),
        };
        for (index, (member, listing)) in self.members.iter().zip(listings).enumerate() {
            let tools = match listing {
                Ok(listing) => listing.tools,
                Err(error) => {
                    list.failures.push((member.name.clone(), error));
                    continue;
                }
            };
            for info in tools {
                let name = exposed_name(&member.prefix, &self.separator, info.name(), &taken);
                taken.insert(name.clone());
                routes.insert(name.clone(), (index, info.name().to_owned()));
                list.tools.push(GroupTool {
                    name,
                    server: member.name.clone(),
                    info,
                });
            }
        }
        *write(&self.routes) = routes;
        list
    }

    /// Calls the tool exposed as `name` on its server, under its original name.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments, &RequestOptions::new())
            .await
    }

    /// [`ClientGroup::call_tool`] with per-request options.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: &RequestOptions,
    ) -> Result<CallToolResult, Error> {
        let (client, original) = match self.route(name) {
            Some(route) => route,
            None => {
                self.list_tools().await;
                self.route(name)
                    .ok_or_else(|| Error::UnknownTool(name.to_owned()))?
            }
        };
        client.call_tool_with(&original, arguments, options).await
    }

    /// The member and original name behind an exposed name.
    pub fn resolve(&self, name: &str) -> Option<(&str, String)> {
        let routes = read(&self.routes);
        let (index, original) = routes.get(name)?;
        Some((self.members[*index].name.as_str(), original.clone()))
    }

    fn route(&self, name: &str) -> Option<(&Client, String)> {
        let routes = read(&self.routes);
        let (index, original) = routes.get(name)?;
        Some((&self.members[*index].client, original.clone()))
    }
}

impl ClientGroupBuilder {
    /// Adds a member; its tools are prefixed with `name`.
    pub fn client(self, name: impl Into<String>, client: Client) -> Self {
        let name = name.into();
        let prefix = name.clone();
        self.client_with_prefix(name, prefix, client)
    }

    /// Adds a member whose tools are prefixed with `prefix` (may be empty:
    /// then the separator is left out too).
    pub fn client_with_prefix(
        mut self,
        name: impl Into<String>,
        prefix: impl Into<String>,
        client: Client,
    ) -> Self {
        self.members.push(Member {
            name: name.into(),
            prefix: prefix.into(),
            client,
        });
        self
    }

    /// What goes between prefix and tool name (default `_`).
    pub fn separator(mut self, separator: impl Into<String>) -> Self {
        self.separator = Some(separator.into());
        self
    }

    /// Makes the group.
    pub fn build(self) -> ClientGroup {
        ClientGroup {
            members: self.members,
            separator: self.separator.unwrap_or_else(|| "_".to_owned()),
            routes: RwLock::new(HashMap::new()),
        }
    }
}

/// `<prefix><sep><tool>` with unsafe characters replaced by `_`; when that is
/// longer than 128 characters or already taken, it is cut and ends in a
/// short hash of prefix and tool instead.
fn exposed_name(prefix: &str, separator: &str, tool: &str, taken: &HashSet<String>) -> String {
    let full = if prefix.is_empty() {
        sanitize(tool)
    } else {
        sanitize(&format!("{prefix}{separator}{tool}"))
    };
    if full.len() <= MAX_NAME_LEN && !taken.contains(&full) {
        return full;
    }
    let seed = format!("{prefix}\u{0}{tool}");
    for attempt in 0u32.. {
        let hash = short_hex(format!("{seed}\u{0}{attempt}").as_bytes());
        let suffix = format!("_{}", &hash[..8]);
        let keep = MAX_NAME_LEN - suffix.len();
        let candidate = format!("{}{suffix}", &full[..full.len().min(keep)]);
        if !taken.contains(&candidate) {
            return candidate;
        }
    }
    unreachable!("some suffix is free")
}

/// Keeps `A-Z a-z 0-9 _ - .`; anything else becomes `_`.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_and_sanitized() {
        let taken = HashSet::new();
        assert_eq!(
            exposed_name("github", "_", "search", &taken),
            "github_search"
        );
        assert_eq!(
            exposed_name("my server", "__", "a/b", &taken),
            "my_server__a_b"
        );
        assert_eq!(exposed_name("", "_", "search", &taken), "search");
    }

    #[test]
    fn long_names_are_cut_to_128_with_a_hash() {
        let tool = "t".repeat(200);
        let name = exposed_name("srv", "_", &tool, &HashSet::new());
        assert_eq!(name.len(), 128);
        assert!(name.starts_with("srv_ttt"));
        let other = exposed_name("srv", "_", &"t".repeat(201), &HashSet::new());
        assert_ne!(name, other, "different tools keep different names");
    }

    #[test]
    fn taken_names_are_disambiguated() {
        let mut taken = HashSet::new();
        let first = exposed_name("a", "_", "b_c", &taken);
        taken.insert(first.clone());
        let second = exposed_name("a_b", "_", "c", &taken);
        assert_eq!(first, "a_b_c");
        assert_ne!(second, first);
        assert!(second.starts_with("a_b_c_"));
        assert!(second.len() <= MAX_NAME_LEN);
    }
}
