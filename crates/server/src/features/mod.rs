//! What a server offers: tools (builder, registry, listing, pagination),
//! prompts, resources, completion, `subscriptions/listen` and tasks. Each registry
//! owns its types; the [`Server`](crate::Server) holds the registries.

pub(crate) mod cache;
pub(crate) mod completion;
pub(crate) mod extract;
pub(crate) mod handles;
pub(crate) mod listen;
pub(crate) mod listing;
pub(crate) mod pagination;
pub(crate) mod prompts;
pub(crate) mod registry;
pub(crate) mod resources;
pub(crate) mod tasks;
pub(crate) mod tool;
