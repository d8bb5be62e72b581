//! The `*/list` methods (tools, prompts, resources, resource templates):
//! one page of what the caller may see, with the list caching hints.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use toolwire_protocol::{
    JsonObject, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult,
};

use crate::context::Principal;
use crate::context::encode::write_json;
use crate::features::cache::CacheHint;
use crate::features::prompts::RegisteredPrompt;
use crate::features::registry::{Named, RegisteredTool};
use crate::features::resources::{RegisteredResource, RegisteredTemplate};

/// Room for a list result's members other than its entries (the cursor,
/// caching hints, `_meta` and the closing brackets) and the envelope's end.
const HEAD_ROOM: usize = 512;

/// A registry entry that a `*/list` method shows to the callers it permits.
pub(crate) trait Listed: Named {
    /// The result of the method that lists this kind of entry.
    type List: ListResult;

    /// Scopes a caller must hold to see and use the entry.
    fn required_scopes(&self) -> &[String];

    /// The entry's definition, as listed.
    fn listed(&self) -> Value;

    /// Appends the entry's definition, as listed, encoded as JSON.
    fn write_listed(&self, out: &mut Vec<u8>);

    /// About how many bytes [`Listed::write_listed`] appends (exact when
    /// the encoding is kept), so a page's buffer is sized once.
    fn listed_len(&self) -> usize {
        256
    }

    /// True when what [`Listed::write_listed`] appends is known, without
    /// looking, to be ASCII (kept with the encoding); false when unknown.
    fn listed_is_ascii(&self) -> bool {
        false
    }

    /// True when `principal` may see and use the entry.
    fn permits(&self, principal: &Principal) -> bool {
        self.required_scopes()
            .iter()
            .all(|s| principal.has_scope(s))
    }
}

/// The result of a `*/list` method.
pub(crate) trait ListResult: Serialize {
    /// The field that holds the entries, as sent (`tools`, `resourceTemplates`, ...).
    const ITEMS: &'static str;

    /// The result with no entries, and the page's cursor and caching hints.
    fn without_items(next_cursor: Option<String>, hint: CacheHint) -> Self;
}

macro_rules! list_results {
    ($($result:ident: $items:literal),* $(,)?) => {$(
        impl ListResult for $result {
            const ITEMS: &'static str = $items;

            fn without_items(next_cursor: Option<String>, hint: CacheHint) -> Self {
                $result {
                    next_cursor,
                    ttl_ms: hint.ttl_ms,
                    cache_scope: hint.scope,
                    ..Default::default()
                }
            }
        }
    )*};
}

list_results! {
    ListToolsResult: "tools",
    ListPromptsResult: "prompts",
    ListResourcesResult: "resources",
    ListResourceTemplatesResult: "resourceTemplates",
}

impl Listed for RegisteredTool {
    type List = ListToolsResult;

    fn required_scopes(&self) -> &[String] {
        &self.required_scopes
    }

    /// Made once, when the tool was registered (the hot path).
    fn listed(&self) -> Value {
        self.listed.clone()
    }

    /// Encoded once, when the tool was registered: copied, not serialised.
    fn write_listed(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.encoded.as_bytes());
    }

    fn listed_len(&self) -> usize {
        self.encoded.len()
    }

    fn listed_is_ascii(&self) -> bool {
        self.encoded_is_ascii
    }
}

/// Implements [`Listed`] for a registered entry from its `definition` and
/// `required_scopes` fields.
macro_rules! listed_definitions {
    ($($entry:ident => $list:ident),* $(,)?) => {$(
        impl Listed for $entry {
            type List = $list;

            fn required_scopes(&self) -> &[String] {
                &self.required_scopes
            }

            fn listed(&self) -> Value {
                serde_json::to_value(&self.definition).unwrap_or_default()
            }

            fn write_listed(&self, out: &mut Vec<u8>) {
                write_json(out, &self.definition);
            }
        }
    )*};
}

listed_definitions! {
    RegisteredPrompt => ListPromptsResult,
    RegisteredResource => ListResourcesResult,
    RegisteredTemplate => ListResourceTemplatesResult,
}

/// An entry of a [`Listing`], whatever its kind: the object-safe part of
/// [`Listed`] (which has an associated type), so one page type serves all four lists.
pub(crate) trait ListingEntry: Send + Sync {
    fn value(&self) -> Value;
    fn write(&self, out: &mut Vec<u8>);
    fn encoded_len(&self) -> usize;
    fn known_ascii(&self) -> bool;
}

impl<T: Listed + Send + Sync> ListingEntry for T {
    fn value(&self) -> Value {
        self.listed()
    }

    fn write(&self, out: &mut Vec<u8>) {
        self.write_listed(out);
    }

    fn encoded_len(&self) -> usize {
        self.listed_len()
    }

    fn known_ascii(&self) -> bool {
        self.listed_is_ascii()
    }
}

/// One page of a `*/list` result, kept apart from its entries until it is
/// sent: a transport writes the entries' JSON straight into the response
/// ([`Listing::write_response`]) instead of building a JSON tree of every
/// definition and serialising it again.
pub(crate) struct Listing {
    /// Every field of the result, the entries' field still an empty list.
    head: JsonObject,
    /// The field that holds the entries (`tools`, `prompts`, ...).
    field: &'static str,
    entries: Vec<Arc<dyn ListingEntry>>,
}

impl Listing {
    /// A page of `items` under the result fields `head` (its entries' field
    /// is still to be filled).
    pub fn new<T: Listed + Send + Sync + 'static>(head: JsonObject, items: Vec<Arc<T>>) -> Self {
        Listing {
            head,
            field: T::List::ITEMS,
            entries: items
                .into_iter()
                .map(|e| e as Arc<dyn ListingEntry>)
                .collect(),
        }
    }

    /// The result as one JSON object.
    pub fn into_object(self) -> JsonObject {
        let mut result = self.head;
        let entries = self.entries.iter().map(|e| e.value()).collect();
        // Replacing the empty list keeps the field in its place.
        result.insert(self.field.to_owned(), Value::Array(entries));
        result
    }

    /// Appends the result object, encoded: byte for byte the serialised
    /// [`Listing::into_object`]. True when all of it is ASCII, so the
    /// invisible-text rule has nothing to scan: each entry's encoding says
    /// so once, when it was registered, and the rest is checked here.
    pub fn write(&self, out: &mut Vec<u8>) -> bool {
        // One allocation for the page, not a doubling (and copy) per size:
        // the entries' length, and room for the members around them (the
        // buffer grew twice per page when only the entries were counted).
        let entries: usize = self.entries.iter().map(|e| e.encoded_len() + 1).sum();
        out.reserve(entries + HEAD_ROOM);
        let mut ascii = true;
        out.push(b'{');
        for (index, (key, value)) in self.head.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            let from = out.len();
            write_json(out, key);
            out.push(b':');
            if key == self.field {
                let key_ascii = out[from..].is_ascii();
                ascii &= self.write_entries(out) && key_ascii;
            } else {
                write_json(out, value);
                ascii &= out[from..].is_ascii();
            }
        }
        if !self.head.contains_key(self.field) {
            // `into_object` appends the field: so does this.
            if !self.head.is_empty() {
                out.push(b',');
            }
            write_json(out, self.field);
            out.push(b':');
            ascii &= self.write_entries(out);
        }
        out.push(b'}');
        ascii
    }

    /// Appends the entries; true when all of them are ASCII.
    fn write_entries(&self, out: &mut Vec<u8>) -> bool {
        let mut ascii = true;
        out.push(b'[');
        for (index, entry) in self.entries.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            let from = out.len();
            entry.write(out);
            ascii &= entry.known_ascii() || out[from..].is_ascii();
        }
        out.push(b']');
        ascii
    }
}
