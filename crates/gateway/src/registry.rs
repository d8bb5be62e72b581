//! What the gateway serves right now: for each upstream, the tools it
//! exposes (and their definitions, to notice changes), or why it is left
//! out; and the table of exposed names. Every change goes through
//! [`Registry::serve`], which adds and removes tools on the running server
//! (each change raises `notifications/tools/list_changed` downstream).

use std::sync::Arc;

use tokio::sync::watch;
use toolwire_client::Client;
use toolwire_server::Server;
use toolwire_server::protocol::{Prompt, Resource, ResourceTemplate, Tool};

use crate::audit::AuditLog;
use crate::bridge::ParkedRequests;
use crate::catalog::Catalog;
use crate::config::{GatewayConfig, UpstreamConfig};
use crate::error::GatewayError;
use crate::forward::{
    Route, UpstreamLink, forwarding_prompt, forwarding_resource, forwarding_template,
    forwarding_tool,
};
use crate::hints::ListHints;
use crate::names::{Collision, NameTable, Origin, exposed_name};
use crate::pin::{PinState, PinStore};
use crate::upstream::UpstreamError;

/// A tool the gateway serves, and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExposedTool {
    /// The name downstream clients call it by.
    pub name: String,
    /// The upstream's name.
    pub upstream: String,
    /// Its name on the upstream.
    pub upstream_tool: String,
    /// The scope a caller needs, when one is configured.
    pub scope: Option<String>,
}

/// One tool being served.
#[derive(Debug)]
struct Served {
    exposed: ExposedTool,
    definition: Tool,
}

/// A tool the gateway does not serve because of its pin.
#[derive(Debug, Clone, PartialEq)]
pub struct WithheldTool {
    /// The upstream's name.
    pub upstream: String,
    /// The tool's name on the upstream.
    pub tool: String,
    /// Not pinned yet (strict mode), or changed since it was pinned.
    pub state: PinState,
    /// The definition as the upstream serves it now (what an approval pins).
    pub definition: Tool,
}

#[derive(Debug)]
pub(crate) struct Registry {
    config: GatewayConfig,
    audit: Option<Arc<AuditLog>>,
    pins: Option<Arc<PinStore>>,
    names: NameTable,
    served: Vec<Vec<Served>>,
    prompts: Catalog<Prompt>,
    resources: Catalog<Resource>,
    templates: Catalog<ResourceTemplate>,
    withheld: Vec<Vec<WithheldTool>>,
    failures: Vec<Option<UpstreamError>>,
    /// Calls waiting for input, shared by every route.
    parked: Arc<ParkedRequests>,
    hints: Vec<ListHints>,
}

impl Registry {
    pub(crate) fn new(
        config: &GatewayConfig,
        audit: Option<Arc<AuditLog>>,
        pins: Option<Arc<PinStore>>,
        parked: Arc<ParkedRequests>,
    ) -> Registry {
        let count = config.upstreams.len();
        Registry {
            config: config.clone(),
            audit,
            pins,
            names: NameTable::default(),
            served: (0..count).map(|_| Vec::new()).collect(),
            prompts: Catalog::new(count),
            resources: Catalog::new(count),
            templates: Catalog::new(count),
            withheld: (0..count).map(|_| Vec::new()).collect(),
            failures: vec![None; count],
            parked,
            hints: vec![ListHints::default(); count],
        }
    }

    /// Room for one more upstream (added by a reload), as number `len`.
    pub(crate) fn add_slot(&mut self, upstream: &UpstreamConfig) {
        self.config.upstreams.push(upstream.clone());
        self.served.push(Vec::new());
        self.prompts.grow();
        self.resources.grow();
        self.templates.grow();
        self.withheld.push(Vec::new());
        self.failures.push(None);
        self.hints.push(ListHints::default());
    }

    /// Stops serving upstream `index` for good (a reload removed or
    /// replaced it).
    pub(crate) fn retire(&mut self, server: &Server, index: usize) {
        self.serve_none(server, index);
        self.set_hints(server, index, ListHints::default());
        self.withheld[index].clear();
        self.failures[index] = None;
    }

    /// Records the hints of upstream `index`'s lists and puts the merged
    /// hints of all upstreams on `server`'s lists.
    pub(crate) fn set_hints(&mut self, server: &Server, index: usize, hints: ListHints) {
        self.hints[index] = hints;
        ListHints::merged(&self.hints).publish(server);
    }

    /// Signs of tool poisoning in each served tool, by exposed name (only
    /// tools with findings).
    pub(crate) fn findings(&self) -> Vec<(String, Vec<String>)> {
        let names = self.served_names();
        self.served
            .iter()
            .flatten()
            .map(|s| {
                let found = findings_among(&s.definition, &s.exposed, &names);
                (s.exposed.name.clone(), found)
            })
            .filter(|(_, found)| !found.is_empty())
            .collect()
    }

    /// The exposed and upstream names of every tool served now.
    pub(crate) fn served_names(&self) -> Vec<String> {
        self.served
            .iter()
            .flatten()
            .flat_map(|s| [s.exposed.name.clone(), s.exposed.upstream_tool.clone()])
            .collect()
    }

    /// The tools served now and their definitions as their upstreams serve
    /// them, in serving order.
    pub(crate) fn served_definitions(&self) -> impl Iterator<Item = (&ExposedTool, &Tool)> {
        self.served
            .iter()
            .flatten()
            .map(|s| (&s.exposed, &s.definition))
    }

    /// The tools withheld now, each with how it would be served (its
    /// exposed name and scope).
    pub(crate) fn withheld_as(&self) -> Vec<(&WithheldTool, ExposedTool)> {
        let mut tools = Vec::new();
        for (index, withheld) in self.withheld.iter().enumerate() {
            let upstream = &self.config.upstreams[index];
            for tool in withheld {
                let exposed = ExposedTool {
                    name: self.exposed_name(upstream, &tool.tool),
                    upstream: upstream.name.clone(),
                    upstream_tool: tool.tool.clone(),
                    scope: scope_of(upstream, &tool.tool),
                };
                tools.push((tool, exposed));
            }
        }
        tools
    }

    /// The number of the upstream named `upstream` whose tool `tool` is
    /// withheld now, and that tool's definition now.
    pub(crate) fn withheld_tool(&self, upstream: &str, tool: &str) -> Option<(usize, Tool)> {
        self.withheld
            .iter()
            .enumerate()
            .find_map(|(index, withheld)| {
                withheld
                    .iter()
                    .find(|w| w.upstream == upstream && w.tool == tool)
                    .map(|w| (index, w.definition.clone()))
            })
    }

    pub(crate) fn withheld(&self) -> Vec<WithheldTool> {
        self.withheld.iter().flatten().cloned().collect()
    }

    pub(crate) fn tools(&self) -> Vec<ExposedTool> {
        self.served
            .iter()
            .flatten()
            .map(|s| s.exposed.clone())
            .collect()
    }

    /// How many tools of upstream `index` are served now.
    pub(crate) fn served_count(&self, index: usize) -> usize {
        self.served[index].len()
    }

    pub(crate) fn failures(&self) -> Vec<UpstreamError> {
        self.failures.iter().flatten().cloned().collect()
    }

    pub(crate) fn failure(&self, index: usize) -> Option<UpstreamError> {
        self.failures[index].clone()
    }

    pub(crate) fn set_failure(&mut self, index: usize, failure: Option<UpstreamError>) {
        self.failures[index] = failure;
    }

    /// Serves `tools` of upstream `index` (those its policy allows) in place
    /// of what it served: unchanged tools stay, changed ones are replaced,
    /// gone ones removed. A tool whose name another upstream's tool holds
    /// is withheld and returned as a collision, never shadowed.
    pub(crate) fn serve(
        &mut self,
        server: &Server,
        index: usize,
        client: Arc<Client>,
        started: Arc<watch::Sender<bool>>,
        tools: Vec<Tool>,
    ) -> Vec<Collision> {
        let upstream = self.config.upstreams[index].clone();
        let allowed: Vec<Tool> = tools
            .into_iter()
            .filter(|tool| serves(&upstream, &tool.name))
            .collect();
        let wanted: Vec<(String, Tool)> = self
            .admitted(index, &upstream, allowed)
            .into_iter()
            .map(|tool| (self.exposed_name(&upstream, &tool.name), tool))
            .collect();
        let mut kept = Vec::new();
        for served in std::mem::take(&mut self.served[index]) {
            let unchanged = wanted
                .iter()
                .any(|(name, tool)| *name == served.exposed.name && *tool == served.definition);
            if unchanged {
                kept.push(served);
            } else {
                self.withdraw(server, &served.exposed.name);
            }
        }
        let mut collisions = Vec::new();
        for (name, tool) in wanted {
            if kept.iter().any(|s| s.exposed.name == name) {
                continue;
            }
            match self.add(server, index, &upstream, (&client, &started), name, tool) {
                Ok(served) => kept.push(served),
                Err(collision) => collisions.push(collision),
            }
        }
        self.served[index] = kept;
        collisions
    }

    /// The tools their pins let through; the others are withheld (and a
    /// definition that changed is recorded in the audit log once).
    fn admitted(&mut self, index: usize, upstream: &UpstreamConfig, tools: Vec<Tool>) -> Vec<Tool> {
        let Some(pins) = self.pins.clone() else {
            return tools;
        };
        let before = std::mem::take(&mut self.withheld[index]);
        let mut admitted = Vec::new();
        for tool in tools {
            match pins.admits(&upstream.name, &tool) {
                Ok(true) => admitted.push(tool),
                Ok(false) => {
                    let withheld = WithheldTool {
                        upstream: upstream.name.clone(),
                        tool: tool.name.clone(),
                        state: pins.state(&upstream.name, &tool),
                        definition: tool,
                    };
                    if !before.contains(&withheld) {
                        self.report_withheld(&withheld);
                    }
                    self.withheld[index].push(withheld);
                }
                Err(error) => {
                    tracing::warn!(%error, tool = %tool.name, "the lock file cannot be written; the tool is withheld");
                }
            }
        }
        admitted
    }

    fn report_withheld(&self, withheld: &WithheldTool) {
        let changes = match &withheld.state {
            PinState::Changed { changes } => changes.clone(),
            _ => Vec::new(),
        };
        tracing::warn!(upstream = %withheld.upstream, tool = %withheld.tool, ?changes,
            "tool withheld until approved (toolwire gateway approve)");
        if let Some(audit) = &self.audit {
            let mut fields = serde_json::Map::new();
            fields.insert("upstream".into(), withheld.upstream.clone().into());
            fields.insert("upstream_tool".into(), withheld.tool.clone().into());
            fields.insert("changes".into(), changes.into());
            let event = if matches!(withheld.state, PinState::New) {
                "unpinned"
            } else {
                "drift"
            };
            audit.write_event(event, fields);
        }
    }

    /// Stops serving every tool, prompt and resource of upstream `index`.
    pub(crate) fn serve_none(&mut self, server: &Server, index: usize) {
        for served in std::mem::take(&mut self.served[index]) {
            self.withdraw(server, &served.exposed.name);
        }
        self.prompts.clear(index, |name| {
            let _ = server.remove_prompt(name);
        });
        self.resources.clear(index, |uri| {
            let _ = server.remove_resource(uri);
        });
        self.templates.clear(index, |template| {
            let _ = server.remove_resource_template(template);
        });
    }

    /// The prompts served now, by exposed name.
    pub(crate) fn prompt_names(&self) -> Vec<String> {
        self.prompts.keys()
    }

    /// The resources served now, by URI.
    pub(crate) fn resource_uris(&self) -> Vec<String> {
        self.resources.keys()
    }

    /// The URIs of the resources upstream `index` serves now.
    pub(crate) fn resource_uris_of(&self, index: usize) -> Vec<String> {
        self.resources.keys_of(index)
    }

    /// The resource templates served now, by URI template.
    pub(crate) fn template_uris(&self) -> Vec<String> {
        self.templates.keys()
    }

    /// Serves `prompts` of upstream `index` (those its allow and deny
    /// patterns let through) in place of what it served, as
    /// [`Registry::serve`] does for tools; names taken are withheld.
    pub(crate) fn serve_prompts(
        &mut self,
        server: &Server,
        index: usize,
        client: &Arc<Client>,
        prompts: Vec<Prompt>,
    ) {
        let upstream = self.config.upstreams[index].clone();
        let link = self.link(index, client);
        let wanted: Vec<(String, Prompt)> = prompts
            .into_iter()
            .filter(|prompt| serves(&upstream, &prompt.name))
            .map(|prompt| (self.exposed_name(&upstream, &prompt.name), prompt))
            .collect();
        let withheld = self.prompts.reconcile(
            index,
            wanted,
            |name| {
                let _ = server.remove_prompt(name);
            },
            |name, prompt| {
                let definition =
                    forwarding_prompt(name, prompt.clone(), link.clone());
                if let Err(error) = server.add_prompt(definition) {
                    tracing::warn!(%error, prompt = %name, "a prompt of upstream {:?} cannot be served", upstream.name);
                }
            },
        );
        for name in withheld {
            tracing::warn!(prompt = %name, upstream = %upstream.name,
                "another upstream's prompt has this name; this one is withheld");
        }
    }

    /// Serves `resources` of upstream `index` (those whose names its allow
    /// and deny patterns let through) under their own URIs, reads forwarded;
    /// a URI another upstream serves is withheld.
    pub(crate) fn serve_resources(
        &mut self,
        server: &Server,
        index: usize,
        client: &Arc<Client>,
        resources: Vec<Resource>,
    ) {
        let upstream = self.config.upstreams[index].clone();
        let link = self.link(index, client);
        let wanted: Vec<(String, Resource)> = resources
            .into_iter()
            .filter(|resource| serves(&upstream, &resource.name))
            .map(|resource| (resource.uri.clone(), resource))
            .collect();
        let withheld = self.resources.reconcile(
            index,
            wanted,
            |uri| {
                let _ = server.remove_resource(uri);
            },
            |_, resource| {
                let definition =
                    forwarding_resource(resource.clone(), link.clone());
                if let Err(error) = server.add_resource(definition) {
                    tracing::warn!(%error, uri = %resource.uri, "a resource of upstream {:?} cannot be served", upstream.name);
                }
            },
        );
        for uri in withheld {
            tracing::warn!(%uri, upstream = %upstream.name,
                "another upstream serves this URI; this one's resource is withheld");
        }
    }

    /// Serves the resource `templates` of upstream `index` as
    /// [`Registry::serve_resources`] does resources: under their own URI
    /// templates, reads of matching URIs forwarded. A URI that matches a
    /// resource or templates of several upstreams is read from the
    /// resource, else from the first template in configuration order.
    pub(crate) fn serve_templates(
        &mut self,
        server: &Server,
        index: usize,
        client: &Arc<Client>,
        templates: Vec<ResourceTemplate>,
    ) {
        let upstream = self.config.upstreams[index].clone();
        let link = self.link(index, client);
        let wanted: Vec<(String, ResourceTemplate)> = templates
            .into_iter()
            .filter(|template| serves(&upstream, &template.name))
            .map(|template| (template.uri_template.clone(), template))
            .collect();
        let withheld = self.templates.reconcile(
            index,
            wanted,
            |template| {
                let _ = server.remove_resource_template(template);
            },
            |_, template| {
                let definition =
                    forwarding_template(template.clone(), link.clone());
                if let Err(error) = server.add_resource_template(definition) {
                    tracing::warn!(%error, template = %template.uri_template, "a resource template of upstream {:?} cannot be served", upstream.name);
                }
            },
        );
        for template in withheld {
            tracing::warn!(%template, upstream = %upstream.name,
                "another upstream serves this URI template; this one's is withheld");
        }
    }

    /// How prompts and resources of upstream `index` are forwarded.
    fn link(&self, index: usize, client: &Arc<Client>) -> UpstreamLink {
        UpstreamLink {
            upstream: self.config.upstreams[index].name.clone(),
            client: Arc::clone(client),
            parked: Arc::clone(&self.parked),
        }
    }

    fn exposed_name(&self, upstream: &UpstreamConfig, tool: &str) -> String {
        exposed_name(
            &upstream.prefix,
            &self.config.name_separator,
            tool,
            self.config.max_name_len,
        )
    }

    fn add(
        &mut self,
        server: &Server,
        index: usize,
        upstream: &UpstreamConfig,
        (client, started): (&Arc<Client>, &Arc<watch::Sender<bool>>),
        name: String,
        tool: Tool,
    ) -> Result<Served, Collision> {
        let origin = Origin {
            upstream: index,
            tool: tool.name.clone(),
        };
        if let Err(collision) = self.names.claim(name.clone(), origin) {
            tracing::warn!(
                "{}; the later tool is withheld",
                self.collision_error(collision.clone())
            );
            return Err(collision);
        }
        let scope = scope_of(upstream, &tool.name);
        let route = Arc::new(Route {
            client: Arc::clone(client),
            started: Arc::clone(started),
            upstream: upstream.name.clone(),
            exposed: name.clone(),
            upstream_tool: tool.name.clone(),
            audit: self.audit.clone(),
            parked: Arc::clone(&self.parked),
        });
        let definition = forwarding_tool(&name, tool.clone(), upstream, scope.clone(), route);
        if let Err(error) = server.add_tool(definition) {
            tracing::warn!(%error, tool = %name, "a tool of upstream {:?} cannot be served", upstream.name);
        }
        Ok(Served {
            exposed: ExposedTool {
                name,
                upstream: upstream.name.clone(),
                upstream_tool: tool.name.clone(),
                scope,
            },
            definition: tool,
        })
    }

    fn withdraw(&mut self, server: &Server, name: &str) {
        let _ = server.remove_tool(name);
        self.names.release(name);
    }

    pub(crate) fn collision_error(&self, collision: Collision) -> GatewayError {
        let name_of = |origin: &Origin| self.config.upstreams[origin.upstream].name.clone();
        GatewayError::Collision {
            first: name_of(&collision.first),
            first_tool: collision.first.tool.clone(),
            second: name_of(&collision.second),
            second_tool: collision.second.tool,
            name: collision.name,
        }
    }
}

/// The findings for `definition`, served (or withheld) as `exposed`, when
/// the gateway serves tools of these `names` (see [`crate::scan::findings`]).
pub(crate) fn findings_among(
    definition: &Tool,
    exposed: &ExposedTool,
    names: &[String],
) -> Vec<String> {
    let others: Vec<String> = names
        .iter()
        .filter(|n| **n != exposed.name && **n != exposed.upstream_tool)
        .cloned()
        .collect();
    crate::scan::findings(definition, &others)
}

/// True when `upstream`'s policy serves `tool`: allowed (or no allow list)
/// and not denied.
fn serves(upstream: &UpstreamConfig, tool: &str) -> bool {
    let allowed = upstream.allow.is_empty() || upstream.allow.iter().any(|g| g.matches(tool));
    allowed && !upstream.deny.iter().any(|g| g.matches(tool))
}

/// The scope `tool` needs: the first matching entry of `scopes`.
fn scope_of(upstream: &UpstreamConfig, tool: &str) -> Option<String> {
    upstream
        .scopes
        .iter()
        .find(|(glob, _)| glob.matches(tool))
        .map(|(_, scope)| scope.clone())
}
