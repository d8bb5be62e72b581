//! The `*/list` methods (tools, prompts, resources, resource templates):
//! one page of what the caller may see, with the list caching hints.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use toolwire_protocol::{
    JsonObject, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, ResultType, keys,
};

use crate::context::Principal;
use crate::context::encode::{SERVER_INFO_META, write_json};
use crate::features::cache::CacheHint;
use crate::features::prompts::RegisteredPrompt;
use crate::features::registry::{Named, RegisteredTool};
use crate::features::resources::{RegisteredResource, RegisteredTemplate};

/// Room for a list result's members other than its entries and the
/// server's info (the cursor, caching hints, the names around them and the
/// closing brackets) and the envelope's end.
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
pub(crate) trait ListResult {
    /// The field that holds the entries, as sent (`tools`, `resourceTemplates`, ...).
    const ITEMS: &'static str;
}

macro_rules! list_results {
    ($($result:ident: $items:literal),* $(,)?) => {$(
        impl ListResult for $result {
            const ITEMS: &'static str = $items;
        }
    )*};
}

list_results! {
    ListToolsResult: "tools",
    ListPromptsResult: "prompts",
    ListResourcesResult: "resources",
    ListResourceTemplatesResult: "resourceTemplates",
}

/// The members of a list page besides its entries.
pub(crate) struct ListHead {
    /// The cursor of the next page, if any.
    pub next_cursor: Option<String>,
    /// `ttlMs` and `cacheScope`.
    pub hint: CacheHint,
    /// The server's info as JSON text, for the result's `_meta`.
    pub server_info: Arc<RawValue>,
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
/// ([`Listing::write`]) instead of building a JSON tree of every
/// definition and serialising it again. The members are those of the
/// protocol's list results, in their order: `resultType`, the entries,
/// `nextCursor`, `ttlMs`, `cacheScope`, and a `_meta` of the server's info.
pub(crate) struct Listing {
    head: ListHead,
    /// The field that holds the entries (`tools`, `prompts`, ...).
    field: &'static str,
    entries: Vec<Arc<dyn ListingEntry>>,
}

impl Listing {
    /// A page of `items` with the members `head`.
    pub fn new<T: Listed + Send + Sync + 'static>(head: ListHead, items: Vec<Arc<T>>) -> Self {
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
        let ListHead {
            next_cursor,
            hint,
            server_info,
        } = self.head;
        let mut result = JsonObject::new();
        result.insert("resultType".to_owned(), to_value(ResultType::Complete));
        let entries = self.entries.iter().map(|e| e.value()).collect();
        result.insert(self.field.to_owned(), Value::Array(entries));
        if let Some(cursor) = next_cursor {
            result.insert("nextCursor".to_owned(), Value::String(cursor));
        }
        result.insert("ttlMs".to_owned(), Value::from(hint.ttl_ms));
        result.insert("cacheScope".to_owned(), to_value(hint.scope));
        let info = serde_json::from_str(server_info.get()).unwrap_or_default();
        let meta = [(keys::SERVER_INFO.to_owned(), info)].into_iter().collect();
        result.insert("_meta".to_owned(), Value::Object(meta));
        result
    }

    /// Appends the result object, encoded: byte for byte the serialised
    /// [`Listing::into_object`]. True when all of it is ASCII, so the
    /// invisible-text rule has nothing to scan: each entry's encoding says
    /// so once, when it was registered, and the rest is checked here.
    pub fn write(&self, out: &mut Vec<u8>) -> bool {
        let head = &self.head;
        let info = head.server_info.get();
        // One allocation for the page, not a doubling (and copy) per size.
        let entries: usize = self.entries.iter().map(|e| e.encoded_len() + 1).sum();
        out.reserve(entries + HEAD_ROOM + info.len());
        out.extend_from_slice(br#"{"resultType":"#);
        write_json(out, &ResultType::Complete);
        out.push(b',');
        write_json(out, self.field);
        out.push(b':');
        let mut ascii = self.write_entries(out);
        if let Some(cursor) = &head.next_cursor {
            out.extend_from_slice(br#","nextCursor":"#);
            let from = out.len();
            write_json(out, cursor);
            ascii &= out[from..].is_ascii();
        }
        out.extend_from_slice(br#","ttlMs":"#);
        write_json(out, &head.hint.ttl_ms);
        out.extend_from_slice(br#","cacheScope":"#);
        write_json(out, &head.hint.scope);
        out.extend_from_slice(SERVER_INFO_META.as_bytes());
        out.extend_from_slice(info.as_bytes());
        out.extend_from_slice(b"}}");
        ascii && info.is_ascii()
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

/// A value of the protocol's types as JSON (they always serialise).
fn to_value(value: impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolwire_protocol::{CacheScope, Implementation, Meta, Tool};

    /// An entry that writes a tool's definition as serde does.
    struct Entry(Tool);

    impl ListingEntry for Entry {
        fn value(&self) -> Value {
            to_value(&self.0)
        }
        fn write(&self, out: &mut Vec<u8>) {
            write_json(out, &self.0);
        }
        fn encoded_len(&self) -> usize {
            64
        }
        fn known_ascii(&self) -> bool {
            false
        }
    }

    fn tool(name: &str, description: &str) -> Tool {
        Tool {
            name: name.to_owned(),
            description: Some(description.to_owned()),
            input_schema: json!({"type": "object"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            ..Tool::default()
        }
    }

    fn page(tools: &[Tool], next_cursor: Option<&str>, info: &Implementation) -> Listing {
        let text = serde_json::to_string(info).unwrap();
        Listing {
            head: ListHead {
                next_cursor: next_cursor.map(str::to_owned),
                hint: CacheHint {
                    ttl_ms: 30_000,
                    scope: CacheScope::Public,
                },
                server_info: Arc::from(RawValue::from_string(text).unwrap()),
            },
            field: ListToolsResult::ITEMS,
            entries: tools
                .iter()
                .map(|t| Arc::new(Entry(t.clone())) as Arc<dyn ListingEntry>)
                .collect(),
        }
    }

    /// The page as the protocol's type serialises it, `_meta` of the server's info.
    fn as_protocol_type(
        tools: &[Tool],
        next_cursor: Option<&str>,
        info: &Implementation,
    ) -> String {
        let meta = [(keys::SERVER_INFO.to_owned(), to_value(info))];
        let result = ListToolsResult {
            tools: tools.to_vec(),
            next_cursor: next_cursor.map(str::to_owned),
            ttl_ms: 30_000,
            cache_scope: CacheScope::Public,
            meta: Some(Meta(meta.into_iter().collect())),
            ..ListToolsResult::default()
        };
        serde_json::to_string(&result).unwrap()
    }

    #[test]
    fn a_page_is_written_as_the_protocol_type_serialises() {
        let info = Implementation::new("srv", "1.0");
        let tools = [tool("a", "first"), tool("b", "second")];
        for cursor in [None, Some("Mg")] {
            let listing = page(&tools, cursor, &info);
            let mut written = Vec::new();
            assert!(listing.write(&mut written), "all ASCII");
            let written = String::from_utf8(written).unwrap();
            assert_eq!(written, as_protocol_type(&tools, cursor, &info));
            let object = serde_json::to_string(&listing.into_object()).unwrap();
            assert_eq!(object, written);
        }
        let empty = page(&[], None, &info);
        let mut written = Vec::new();
        empty.write(&mut written);
        assert_eq!(
            String::from_utf8(written).unwrap(),
            r#"{"resultType":"complete","tools":[],"ttlMs":30000,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1.0"}}}"#
        );
    }

    #[test]
    fn text_outside_ascii_anywhere_is_reported() {
        let ascii = Implementation::new("srv", "1.0");
        let mut written = Vec::new();
        assert!(!page(&[tool("a", "caf\u{e9}")], None, &ascii).write(&mut written));
        let mut written = Vec::new();
        assert!(!page(&[tool("a", "x")], Some("\u{e9}"), &ascii).write(&mut written));
        let mut written = Vec::new();
        let info = Implementation::new("s\u{200b}rv", "1.0");
        assert!(!page(&[tool("a", "x")], None, &info).write(&mut written));
    }
}
