//! The params of a request to a modern (2026-07-28) server as they are written: the request's
//! own members with the era's `_meta` keys put in, serialized straight from the request and
//! the [`ModernStamp`] without copying either into a new map (a deep copy of the arguments,
//! `clientCapabilities` and `clientInfo` on every call).
//!
//! The rule (MCP 2026-07-28, "Base Protocol: `_meta`", per-request metadata): `_meta` carries
//! our protocol version always (the request's own is replaced), and the stamp's
//! `clientCapabilities` and `clientInfo` unless the request carries its own as objects. The
//! members keep their order: a replaced one where it was, an added one at the end (`_meta`
//! last when the request had none), as [`super::handshake::prepare_params`] builds them.
//!
//! [`Stripped`] is the other era's view: the params a legacy server gets, without the modern
//! `_meta` keys, written without the copy `prepare_params` makes to take them out.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::handshake::ModernStamp;
use crate::era::{
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION,
};

/// The `_meta` keys only the modern era defines; a legacy server never gets them.
const MODERN_KEYS: [&str; 4] = [
    META_PROTOCOL_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
];

/// A request's `params` as a legacy (2025-era) server gets them: the same JSON text as the
/// params [`super::handshake::prepare_params`] gives for that era, written from the request's
/// own. A `_meta` object loses the [`MODERN_KEYS`], and goes when nothing else is left in it; a
/// `_meta` without any of them, and params that are not an object, are written as they are.
pub struct Stripped<'a>(pub &'a Value);

impl Serialize for Stripped<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(params) = self.0 else {
            return self.0.serialize(serializer);
        };
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in params {
            let meta = match value {
                Value::Object(meta) if key == "_meta" => meta,
                _ => {
                    map.serialize_entry(key, value)?;
                    continue;
                }
            };
            let modern = |k: &String| MODERN_KEYS.contains(&k.as_str());
            if !meta.keys().any(modern) {
                map.serialize_entry(key, value)?;
            } else if !meta.keys().all(modern) {
                map.serialize_entry(key, &Legacy(meta))?;
            }
        }
        map.end()
    }
}

/// A `_meta` object without the [`MODERN_KEYS`].
struct Legacy<'a>(&'a Map<String, Value>);

impl Serialize for Legacy<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.0 {
            if !MODERN_KEYS.contains(&key.as_str()) {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// A request's `params` (an object, or nothing: then only `_meta`) as a modern server gets
/// them.
pub struct Stamped<'a> {
    /// The params the client's request brought (anything but an object counts as none).
    pub params: Option<&'a Value>,
    /// The era's keys.
    pub stamp: &'a ModernStamp,
}

impl Serialize for Stamped<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let own = match self.params {
            Some(Value::Object(params)) => Some(params),
            _ => None,
        };
        let mut map = serializer.serialize_map(None)?;
        let mut meta_written = false;
        for (key, value) in own.into_iter().flatten() {
            if key == "_meta" {
                let meta = Meta {
                    own: value.as_object(),
                    stamp: self.stamp,
                };
                map.serialize_entry(key, &meta)?;
                meta_written = true;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        if !meta_written {
            let meta = Meta {
                own: None,
                stamp: self.stamp,
            };
            map.serialize_entry("_meta", &meta)?;
        }
        map.end()
    }
}

/// The `_meta` object: the request's own members (none when it had no `_meta` object), with
/// the stamp's keys put in.
struct Meta<'a> {
    own: Option<&'a Map<String, Value>>,
    stamp: &'a ModernStamp,
}

impl Serialize for Meta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let stamp = self.stamp;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.own.into_iter().flatten() {
            match key.as_str() {
                META_PROTOCOL_VERSION => map.serialize_entry(key, &stamp.version)?,
                META_CLIENT_CAPABILITIES if !value.is_object() => {
                    map.serialize_entry(key, &stamp.capabilities)?
                }
                META_CLIENT_INFO if !value.is_object() => {
                    map.serialize_entry(key, &stamp.client_info)?
                }
                _ => map.serialize_entry(key, value)?,
            }
        }
        let has = |key: &str| self.own.is_some_and(|own| own.contains_key(key));
        if !has(META_PROTOCOL_VERSION) {
            map.serialize_entry(META_PROTOCOL_VERSION, &stamp.version)?;
        }
        if !has(META_CLIENT_CAPABILITIES) {
            map.serialize_entry(META_CLIENT_CAPABILITIES, &stamp.capabilities)?;
        }
        if !has(META_CLIENT_INFO) {
            map.serialize_entry(META_CLIENT_INFO, &stamp.client_info)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_legacy_server_gets_the_params_prepare_params_gives() {
        let era = super::super::handshake::ServerEra::Legacy {
            version: "2025-11-25".into(),
        };
        let (v, c, l) = (
            META_PROTOCOL_VERSION,
            META_CLIENT_CAPABILITIES,
            META_LOG_LEVEL,
        );
        for params in [
            json!({"name": "t", "arguments": {"b": 1, "a": 2}}),
            json!({"name": "t", "_meta": {v: "2026-07-28", c: {}}, "arguments": {}}),
            json!({"_meta": {"progressToken": 7, v: "2026-07-28", l: "info"}, "name": "t"}),
            json!({"_meta": {"progressToken": 7}, "name": "t"}),
            json!({"_meta": {}, "name": "t"}),
            json!({"_meta": 5, "name": "t"}),
            json!({"name": "t", "nested": {"_meta": {v: "x"}}}),
            json!([1, {"_meta": {v: "x"}}]),
        ] {
            let prepared = super::super::handshake::prepare_params(Some(&era), Some(&params));
            assert_eq!(
                serde_json::to_string(&Stripped(&params)).unwrap(),
                serde_json::to_string(prepared.as_ref().unwrap_or(&params)).unwrap(),
                "{params}"
            );
        }
    }

    fn stamp() -> ModernStamp {
        ModernStamp {
            version: "2026-07-28".into(),
            capabilities: json!({"sampling": {}}),
            client_info: json!({"name": "c", "version": "1"}),
        }
    }

    fn text(params: Option<&Value>) -> String {
        serde_json::to_string(&Stamped {
            params,
            stamp: &stamp(),
        })
        .unwrap()
    }

    #[test]
    fn the_stamp_goes_in_without_reordering_the_request() {
        let v = META_PROTOCOL_VERSION;
        let (c, i) = (META_CLIENT_CAPABILITIES, META_CLIENT_INFO);
        let none = format!(
            r#"{{"_meta":{{"{v}":"2026-07-28","{c}":{{"sampling":{{}}}},"{i}":{{"name":"c","version":"1"}}}}}}"#
        );
        assert_eq!(text(None), none);
        assert_eq!(text(Some(&json!([1, 2]))), none);
        let own = json!({"_meta": {"progressToken": 7, v: "1999-01-01", c: "not an object",
            i: {"name": "x"}}, "name": "t", "arguments": {"b": 1, "a": 2}});
        assert_eq!(
            text(Some(&own)),
            format!(
                r#"{{"_meta":{{"progressToken":7,"{v}":"2026-07-28","{c}":{{"sampling":{{}}}},"{i}":{{"name":"x"}}}},"name":"t","arguments":{{"b":1,"a":2}}}}"#
            )
        );
        let not_object = json!({"name": "t", "_meta": 5, "x": 1});
        assert_eq!(
            text(Some(&not_object)),
            format!(
                r#"{{"name":"t","_meta":{{"{v}":"2026-07-28","{c}":{{"sampling":{{}}}},"{i}":{{"name":"c","version":"1"}}}},"x":1}}"#
            )
        );
    }
}
