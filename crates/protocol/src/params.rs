//! The `params` object of a request, kept as the text of its members and
//! read on demand.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;
use std::sync::OnceLock;

use serde::de::value::MapDeserializer;
use serde::de::{self, DeserializeOwned, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::JsonObject;
use crate::request_meta::RequestMeta;

/// A JSON object read one level deep: each member's name, and its value as
/// text (valid JSON, unparsed), in the order they came. A name given twice
/// is kept twice; [`RawObject::get`] answers with the last, as a map would.
///
/// ```
/// use toolwire_protocol::RawObject;
/// let object: RawObject = serde_json::from_str(r#"{"a": [1, 2], "b": {"c": null}}"#).unwrap();
/// assert_eq!(object.get("b").map(|v| v.get()), Some(r#"{"c": null}"#));
/// ```
#[derive(Clone, Default)]
pub struct RawObject {
    members: Vec<(Name, Box<RawValue>)>,
}

/// A member's name: the names MCP gives members of params and `_meta` are
/// not copied (they are most of the names a request has).
type Name = Cow<'static, str>;

/// The names a member's name is compared with before it is copied.
const KNOWN_NAMES: &[&str] = &[
    "_meta",
    "name",
    "arguments",
    "cursor",
    "uri",
    "requestState",
    "inputResponses",
    "taskId",
    "progressToken",
    "traceparent",
    "tracestate",
    "baggage",
    crate::keys::PROTOCOL_VERSION,
    crate::keys::CLIENT_CAPABILITIES,
    crate::keys::CLIENT_INFO,
    crate::keys::LOG_LEVEL,
];

/// Reads a member's name: one of [`KNOWN_NAMES`] without a copy.
struct NameSeed;

impl<'de> de::DeserializeSeed<'de> for NameSeed {
    type Value = Name;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Name, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for NameSeed {
    type Value = Name;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Name, E> {
        Ok(match KNOWN_NAMES.iter().find(|known| **known == name) {
            Some(known) => Cow::Borrowed(*known),
            None => Cow::Owned(name.to_owned()),
        })
    }

    fn visit_string<E: de::Error>(self, name: String) -> Result<Name, E> {
        Ok(match KNOWN_NAMES.iter().find(|known| **known == name) {
            Some(known) => Cow::Borrowed(*known),
            None => Cow::Owned(name),
        })
    }
}

impl RawObject {
    /// The value of member `name` as text (the last, if given twice).
    pub fn get(&self, name: &str) -> Option<&RawValue> {
        self.members
            .iter()
            .rev()
            .find(|(key, _)| &**key == name)
            .map(|(_, value)| &**value)
    }

    /// The members in the order they came.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &RawValue)> {
        self.members.iter().map(|(key, value)| (&**key, &**value))
    }

    /// Reads the object as `T` member by member, without reading the text
    /// of a member `T` does not have.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        self.parse_leaving_out::<T>(None)
    }

    /// [`RawObject::parse`], with member `left_out` (if any) left out.
    fn parse_leaving_out<T: DeserializeOwned>(
        &self,
        left_out: Option<&str>,
    ) -> Result<T, serde_json::Error> {
        let members = self
            .iter()
            .filter(|(key, _)| Some(*key) != left_out)
            .map(|(key, value)| (key, Member(value)));
        T::deserialize(MapDeserializer::new(members))
    }

    /// The object parsed into a map (the last of duplicate members counts).
    pub fn to_object(&self) -> JsonObject {
        self.iter()
            .map(|(key, value)| {
                let value = serde_json::from_str(value.get()).unwrap_or(Value::Null);
                (key.to_owned(), value)
            })
            .collect()
    }

    /// The members of a JSON value's text when it is an object, `None` when
    /// it is some other value.
    pub fn of(value: &RawValue) -> Option<RawObject> {
        match serde_json::from_str::<MaybeObject>(value.get()) {
            Ok(MaybeObject::Object(object)) => Some(object),
            _ => None,
        }
    }
}

/// The text of member `name` of the JSON object `object` (the last, if it
/// is given twice), found without reading the other members into anything;
/// `None` when `object` is not an object or has no such member.
///
/// ```
/// use serde_json::value::RawValue;
/// use toolwire_protocol::object_member;
/// let meta: &RawValue = serde_json::from_str(r#"{"a": {"b": 1}, "v": "2026-07-28"}"#).unwrap();
/// assert_eq!(object_member(meta, "v").map(|v| v.get()), Some(r#""2026-07-28""#));
/// assert!(object_member(meta, "b").is_none());
/// ```
pub fn object_member<'a>(object: &'a RawValue, name: &str) -> Option<&'a RawValue> {
    let mut deserializer = serde_json::Deserializer::from_str(object.get());
    deserializer
        .deserialize_map(FindMember(name))
        .ok()
        .flatten()
}

/// Looks through an object's members for one name.
struct FindMember<'n>(&'n str);

impl<'de> Visitor<'de> for FindMember<'_> {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(matches) = map.next_key_seed(NameIs(self.0))? {
            if matches {
                found = Some(map.next_value::<&'de RawValue>()?);
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// A member name, compared with one name without being copied.
struct NameIs<'n>(&'n str);

impl<'de> de::DeserializeSeed<'de> for NameIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for NameIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<bool, E> {
        Ok(name == self.0)
    }
}

impl FromIterator<(Box<str>, Box<RawValue>)> for RawObject {
    /// An object of these members, in this order (written as they are).
    ///
    /// ```
    /// use serde_json::value::to_raw_value;
    /// use toolwire_protocol::RawObject;
    /// let object: RawObject = [("n".into(), to_raw_value(&1).unwrap())].into_iter().collect();
    /// assert_eq!(serde_json::to_string(&object).unwrap(), r#"{"n":1}"#);
    /// ```
    fn from_iter<I: IntoIterator<Item = (Box<str>, Box<RawValue>)>>(members: I) -> Self {
        RawObject {
            members: members
                .into_iter()
                .map(|(key, value)| (Cow::Owned(String::from(key)), value))
                .collect(),
        }
    }
}

impl fmt::Debug for RawObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(key, value)| (key, value.get())))
            .finish()
    }
}

impl Serialize for RawObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.members.len()))?;
        for (key, value) in self.iter() {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match MaybeObject::deserialize(deserializer)? {
            MaybeObject::Object(object) => Ok(object),
            MaybeObject::Other => Err(de::Error::custom(NotAnObject)),
        }
    }
}

/// A member's text to read a value from: what `&RawValue` does, except that
/// a member the target type ignores is not read at all.
struct Member<'a>(&'a RawValue);

impl<'de> IntoDeserializer<'de, serde_json::Error> for Member<'de> {
    type Deserializer = Member<'de>;

    fn into_deserializer(self) -> Member<'de> {
        self
    }
}

/// `fn $name(self, [args,] visitor)`, done by the member's `&RawValue`.
macro_rules! by_the_text {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            fn $name<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, serde_json::Error> {
                self.0.$name($($arg,)* visitor)
            }
        )*
    };
}

impl<'de> Deserializer<'de> for Member<'de> {
    type Error = serde_json::Error;

    fn deserialize_ignored_any<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        visitor.visit_unit()
    }

    by_the_text! {
        deserialize_any();
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_option();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
    }
}

/// Any JSON value: an object read one level deep, or anything else (read
/// and dropped).
#[derive(Debug, Clone)]
pub enum MaybeObject {
    /// An object.
    Object(RawObject),
    /// Any other value.
    Other,
}

impl<'de> Deserialize<'de> for MaybeObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MaybeObjectVisitor)
    }
}

struct MaybeObjectVisitor;

impl<'de> Visitor<'de> for MaybeObjectVisitor {
    type Value = MaybeObject;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MaybeObject, A::Error> {
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(4));
        while let Some(key) = map.next_key_seed(NameSeed)? {
            let value = map.next_value::<Box<RawValue>>()?;
            members.push((key, value));
        }
        Ok(MaybeObject::Object(RawObject { members }))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<MaybeObject, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(MaybeObject::Other)
    }

    fn visit_bool<E>(self, _: bool) -> Result<MaybeObject, E> {
        Ok(MaybeObject::Other)
    }
    fn visit_i64<E>(self, _: i64) -> Result<MaybeObject, E> {
        Ok(MaybeObject::Other)
    }
    fn visit_u64<E>(self, _: u64) -> Result<MaybeObject, E> {
        Ok(MaybeObject::Other)
    }
    fn visit_f64<E>(self, _: f64) -> Result<MaybeObject, E> {
        Ok(MaybeObject::Other)
    }
    fn visit_str<E>(self, _: &str) -> Result<MaybeObject, E> {
        Ok(MaybeObject::Other)
    }
    fn visit_unit<E>(self) -> Result<MaybeObject, E> {
        Ok(MaybeObject::Other)
    }
}

/// A request's `params`: a JSON object kept as the text of its members, so
/// that a server can route and check a request by reading only the members
/// it needs ([`Params::member`], [`Params::parse`] into a typed struct)
/// instead of building a map of everything first. The map is built the
/// first time something asks for it ([`Params::object`], or through
/// `Deref`), then kept.
///
/// ```
/// use serde_json::json;
/// use toolwire_protocol::Params;
///
/// let params: Params = serde_json::from_str(r#"{"name": "echo", "arguments": {"text": "hi"}}"#).unwrap();
/// #[derive(serde::Deserialize)]
/// struct Named { name: String }
/// assert_eq!(params.parse::<Named>().unwrap().name, "echo");
/// assert_eq!(params.member("arguments").unwrap().get(), r#"{"text": "hi"}"#);
/// assert_eq!(params["arguments"], json!({"text": "hi"}));
/// ```
pub struct Params {
    /// The members as they came, unless the object was changed since
    /// ([`Params::object_mut`]) or the params were made from an object.
    members: Option<RawObject>,
    /// The parsed object, once something asked for it (boxed: a request
    /// moves through futures, and this is rarely built).
    object: OnceLock<Box<JsonObject>>,
    /// The members of `_meta`, once something asked for them.
    meta: OnceLock<Option<RawObject>>,
    /// `_meta` decoded, once something asked for it (not boxed: nearly
    /// every request is asked, and its large members are shared already).
    request_meta: OnceLock<Option<RequestMeta>>,
}

impl Params {
    /// Params made from an object (written out when serialized).
    pub fn from_object(object: JsonObject) -> Params {
        Params {
            members: None,
            object: OnceLock::from(Box::new(object)),
            meta: OnceLock::new(),
            request_meta: OnceLock::new(),
        }
    }

    /// Params from an object's members as text.
    pub fn from_raw_object(members: RawObject) -> Params {
        Params {
            members: Some(members),
            object: OnceLock::new(),
            meta: OnceLock::new(),
            request_meta: OnceLock::new(),
        }
    }

    /// The parsed object (parsed on the first call, then kept).
    pub fn object(&self) -> &JsonObject {
        self.object.get_or_init(|| {
            Box::new(
                self.members
                    .as_ref()
                    .map(RawObject::to_object)
                    .unwrap_or_default(),
            )
        })
    }

    /// The object, to change; the params are written from it from now on.
    pub fn object_mut(&mut self) -> &mut JsonObject {
        self.object();
        self.members = None;
        self.meta = OnceLock::new();
        self.request_meta = OnceLock::new();
        self.object
            .get_mut()
            .expect("the object was just made by object()")
    }

    /// The object, taken out.
    pub fn into_object(self) -> JsonObject {
        self.object();
        *self
            .object
            .into_inner()
            .expect("the object was just made by object()")
    }

    /// The value of member `name` as text: borrowed when the params are
    /// text, written out when they were made from an object.
    pub fn member(&self, name: &str) -> Option<Cow<'_, RawValue>> {
        match &self.members {
            Some(members) => members.get(name).map(Cow::Borrowed),
            None => self
                .object()
                .get(name)
                .and_then(|value| serde_json::value::to_raw_value(value).ok())
                .map(Cow::Owned),
        }
    }

    /// The members of `_meta` as text: `None` when there is no `_meta`,
    /// `Some(None)` when it is not an object.
    pub fn meta(&self) -> Option<Option<&RawObject>> {
        let meta = self.member("_meta")?;
        Some(self.meta.get_or_init(|| RawObject::of(&meta)).as_ref())
    }

    /// The members MCP defines of `_meta`, decoded in one pass over its text
    /// on the first call, then kept: `None` when there is no `_meta` or it
    /// does not decode that way ([`RequestMeta::read`]; [`Params::meta`]
    /// then reads it member by member).
    pub fn request_meta(&self) -> Option<&RequestMeta> {
        let decode = || {
            let text = self.member("_meta")?;
            RequestMeta::read(&text)
        };
        self.request_meta.get_or_init(decode).as_ref()
    }

    /// [`Params::request_meta`], taken out: for the one reader that keeps
    /// it (a later call decodes it again).
    pub fn take_request_meta(&mut self) -> Option<RequestMeta> {
        self.request_meta();
        self.request_meta.take().flatten()
    }

    /// Reads the params as `T`, from their members' text when they have one
    /// (a member `T` does not have is not read). Params that do not read as
    /// `T` are read again from the map, so the outcome is the map's whatever
    /// the params came from: the last of duplicate members counts, and an
    /// error names no position in the text.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        if let (Some(members), None) = (&self.members, self.object.get()) {
            if let Ok(value) = members.parse() {
                return Ok(value);
            }
        }
        T::deserialize(self.object())
    }

    /// [`Params::parse`], leaving `_meta` out: for a reader that checked the
    /// request's metadata on its own and has no use for a typed copy of it
    /// (a `_meta` field of `T` stays `None`).
    pub fn parse_without_meta<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        if let (Some(members), None) = (&self.members, self.object.get()) {
            if let Ok(value) = members.parse_leaving_out(Some("_meta")) {
                return Ok(value);
            }
        }
        T::deserialize(self.object())
    }
}

/// Params were given JSON that is not an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("params must be an object")]
pub struct NotAnObject;

impl Default for Params {
    /// An empty object.
    fn default() -> Self {
        Params::from_object(JsonObject::new())
    }
}

impl From<JsonObject> for Params {
    fn from(object: JsonObject) -> Self {
        Params::from_object(object)
    }
}

impl From<Params> for JsonObject {
    fn from(params: Params) -> Self {
        params.into_object()
    }
}

impl Deref for Params {
    type Target = JsonObject;

    fn deref(&self) -> &JsonObject {
        self.object()
    }
}

impl Clone for Params {
    fn clone(&self) -> Self {
        Params {
            members: self.members.clone(),
            object: self.object.clone(),
            meta: self.meta.clone(),
            request_meta: self.request_meta.clone(),
        }
    }
}

impl PartialEq for Params {
    /// Equal when the objects are (whatever the spacing or member order of
    /// their texts).
    fn eq(&self, other: &Self) -> bool {
        self.object() == other.object()
    }
}

impl fmt::Debug for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.members {
            Some(members) => f.debug_tuple("Params").field(members).finish(),
            None => f.debug_tuple("Params").field(self.object()).finish(),
        }
    }
}

impl Serialize for Params {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.members {
            Some(members) => members.serialize(serializer),
            None => self.object().serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        RawObject::deserialize(deserializer).map(Params::from_raw_object)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Request;

    #[test]
    fn object_member_finds_the_last_of_a_name_escaped_or_not_and_nothing_in_other_values() {
        let raw = |text: &str| -> Box<RawValue> { RawValue::from_string(text.to_owned()).unwrap() };
        let object = raw(r#"{"k": 1, "n": {"k": 2}, "\u006b": [3], "x": "k"}"#);
        assert_eq!(object_member(&object, "k").map(RawValue::get), Some("[3]"));
        assert_eq!(
            object_member(&object, "n").map(RawValue::get),
            Some(r#"{"k": 2}"#)
        );
        assert!(object_member(&object, "missing").is_none());
        for other in [r#""k""#, "[1]", "null", "2"] {
            assert!(object_member(&raw(other), "k").is_none(), "{other}");
        }
    }

    #[test]
    fn members_are_kept_until_the_object_changes() {
        let mut params: Params = serde_json::from_str(r#"{ "b": 1, "a": [true] }"#).unwrap();
        assert_eq!(params.member("a").unwrap().get(), "[true]");
        assert_eq!(params.len(), 2);
        assert_eq!(
            serde_json::to_string(&params).unwrap(),
            r#"{"b":1,"a":[true]}"#
        );
        params.object_mut().insert("c".into(), json!(null));
        assert_eq!(params.member("c").unwrap().get(), "null");
        assert_eq!(
            serde_json::to_string(&params).unwrap(),
            r#"{"b":1,"a":[true],"c":null}"#
        );
    }

    #[test]
    fn only_objects_are_params() {
        for text in ["[1]", "null", "\"x\"", "3", "true"] {
            let error = serde_json::from_str::<Params>(text).unwrap_err();
            assert!(
                error.to_string().contains("params must be an object"),
                "{text}: {error}"
            );
        }
    }

    #[test]
    fn equal_objects_are_equal_params() {
        let a: Params = serde_json::from_str(r#"{"x": 1, "y": 2}"#).unwrap();
        let b = Params::from_object(json!({"y": 2, "x": 1}).as_object().unwrap().clone());
        assert_eq!(a, b);
    }

    #[test]
    fn parse_reads_members_or_the_object() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Named {
            name: String,
        }
        let text: Params =
            serde_json::from_str(r#"{"name": "a", "other": {"deep": [1]}}"#).unwrap();
        assert_eq!(text.parse::<Named>().unwrap(), Named { name: "a".into() });
        let object = Params::from_object(json!({"name": "b"}).as_object().unwrap().clone());
        assert_eq!(object.parse::<Named>().unwrap(), Named { name: "b".into() });
        assert!(object.parse::<Vec<u8>>().is_err());
    }

    #[test]
    fn the_last_of_duplicate_members_counts() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Named {
            name: String,
        }
        let params: Params = serde_json::from_str(r#"{"name": "a", "name": "b"}"#).unwrap();
        assert_eq!(params.member("name").unwrap().get(), "\"b\"");
        assert_eq!(params.parse::<Named>().unwrap(), Named { name: "b".into() });
        assert_eq!(params["name"], "b");
    }

    #[test]
    fn meta_can_be_left_out() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct WithMeta {
            cursor: Option<String>,
            #[serde(rename = "_meta")]
            meta: Option<JsonObject>,
        }
        let params: Params = serde_json::from_str(r#"{"cursor": "c", "_meta": {"k": 1}}"#).unwrap();
        let left_out: WithMeta = params.parse_without_meta().unwrap();
        assert_eq!(
            left_out,
            WithMeta {
                cursor: Some("c".into()),
                meta: None
            }
        );
        let kept: WithMeta = params.parse().unwrap();
        assert_eq!(kept.meta.unwrap()["k"], 1);
    }

    #[test]
    fn meta_members_are_read_once() {
        let params: Params =
            serde_json::from_str(r#"{"_meta": {"progressToken": 7, "x": [1]}}"#).unwrap();
        let meta = params.meta().unwrap().unwrap();
        assert_eq!(meta.get("progressToken").unwrap().get(), "7");
        let not_object: Params = serde_json::from_str(r#"{"_meta": [1]}"#).unwrap();
        assert!(not_object.meta().unwrap().is_none());
        let none: Params = serde_json::from_str(r#"{"a": 1}"#).unwrap();
        assert!(none.meta().is_none());
    }

    #[test]
    fn a_request_reads_from_a_value_too() {
        let value = json!({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"k": "v"}});
        let request: Request = serde_json::from_value(value).unwrap();
        assert_eq!(request.params.unwrap()["k"], "v");
    }
}
