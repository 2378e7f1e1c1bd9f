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

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::handshake::ModernStamp;
use crate::era::{META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION};

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
