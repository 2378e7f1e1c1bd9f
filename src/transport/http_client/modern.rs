//! What a message we POST says about itself: its `id` and `method`, and for a request of MCP
//! 2026-07-28 (one whose `params._meta` carries `io.modelcontextprotocol/protocolVersion`) the
//! request metadata headers it needs; and an HTTP error answer that is the JSON-RPC answer to
//! such a request.
//!
//! Source: MCP specification 2026-07-28, "Transports: Streamable HTTP":
//! * "Request Metadata": every POST carries `MCP-Protocol-Version` equal to the body's
//!   `_meta` version, `Mcp-Method` (the body's `method`) and, for `tools/call`,
//!   `prompts/get` and `resources/read`, `Mcp-Name` (`params.name` or `params.uri`); a value
//!   that is not plain visible ASCII (or that looks like the sentinel itself) is sent as
//!   `=?base64?<Base64 of its UTF-8>?=` ("Value Encoding");
//! * a modern server answers a request it refuses with an HTTP error status *and* a JSON-RPC
//!   error body (400 for `UnsupportedProtocolVersionError`, header mismatches and missing
//!   capabilities, 404 for an unknown method): that body is the request's answer;
//! * "Cancellation": closing the request's response stream cancels it; no
//!   `notifications/cancelled` is sent over HTTP.

use base64::Engine;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::Value;

/// `Mcp-Method`.
pub const METHOD: &str = "mcp-method";
/// `Mcp-Name`.
pub const NAME: &str = "mcp-name";

/// The `id`, `method` and the few `params` of a message we send.
#[derive(Deserialize, Default)]
pub(super) struct Sent {
    pub(super) id: Option<Value>,
    pub(super) method: Option<String>,
    params: Option<SentParams>,
    /// Sent again in a new session after the server forgot the first one.
    #[serde(skip)]
    pub(super) again: bool,
}

#[derive(Deserialize, Default)]
struct SentParams {
    name: Option<Value>,
    uri: Option<Value>,
    /// The `requestId` of a `notifications/cancelled`.
    #[serde(rename = "requestId")]
    request_id: Option<Value>,
    #[serde(rename = "_meta")]
    meta: Option<SentMeta>,
}

#[derive(Deserialize, Default)]
struct SentMeta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    version: Option<Value>,
}

/// Only `id` and `method`, for a message whose `params` are not the shape [`Sent`] reads.
#[derive(Deserialize, Default)]
struct Head {
    id: Option<Value>,
    method: Option<String>,
}

impl Sent {
    /// Reads a message's JSON text; what cannot be read is left out (never an error).
    pub(super) fn of(body: &[u8]) -> Sent {
        serde_json::from_slice(body).unwrap_or_else(|_| {
            let head: Head = serde_json::from_slice(body).unwrap_or_default();
            Sent {
                id: head.id,
                method: head.method,
                ..Sent::default()
            }
        })
    }

    /// The id of a request (a message with both `id` and `method`), which waits for an answer.
    pub(super) fn request_id(&self) -> Option<&Value> {
        self.method.as_ref().and(self.id.as_ref())
    }

    pub(super) fn is(&self, method: &str) -> bool {
        self.method.as_deref() == Some(method)
    }

    /// The 2026-07-28 protocol version a request carries in `params._meta` (`None`: a
    /// message of the 2025 era, or a notification).
    pub(super) fn modern_version(&self) -> Option<&str> {
        self.request_id()?;
        let meta = self.params.as_ref()?.meta.as_ref()?;
        meta.version.as_ref()?.as_str()
    }

    /// The tool a 2026-07-28 `tools/call` calls.
    pub(super) fn modern_tool(&self) -> Option<&str> {
        self.modern_version()?;
        if !self.is("tools/call") {
            return None;
        }
        self.params.as_ref()?.name.as_ref()?.as_str()
    }

    /// The request a `notifications/cancelled` withdraws, as JSON text.
    pub(super) fn cancelled_request(&self) -> Option<String> {
        if !self.is("notifications/cancelled") {
            return None;
        }
        let id = self.params.as_ref()?.request_id.as_ref()?;
        Some(id.to_string())
    }

    /// Appends the request metadata headers of a 2026-07-28 request (see the module doc) to
    /// `headers`; nothing for any other message. A value no header can carry even encoded is
    /// left out (the server then refuses the request, and says why).
    pub(super) fn modern_headers(&self, headers: &mut HeaderMap) {
        let Some(version) = self.modern_version() else {
            return;
        };
        let mut push = |name, value: &str| {
            if let Some(v) = header_value(value) {
                headers.append(name, v);
            }
        };
        push(PROTOCOL_VERSION_HEADER, version);
        let method = self.method.as_deref().unwrap_or_default();
        push(METHOD_HEADER, method);
        let params = self.params.as_ref();
        let name = match method {
            "tools/call" | "prompts/get" => params.and_then(|p| p.name.as_ref()),
            "resources/read" => params.and_then(|p| p.uri.as_ref()),
            _ => None,
        };
        if let Some(name) = name.and_then(Value::as_str) {
            push(NAME_HEADER, name);
        }
    }
}

/// `MCP-Protocol-Version`, parsed once.
const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static(super::PROTOCOL_VERSION);
/// `Mcp-Method`, parsed once.
const METHOD_HEADER: HeaderName = HeaderName::from_static(METHOD);
/// `Mcp-Name`, parsed once.
const NAME_HEADER: HeaderName = HeaderName::from_static(NAME);

/// `value` as a header value, encoded as [`encode_header_value`] says (copied once when it
/// needs no encoding); `None` when even the encoded text is no header value.
fn header_value(value: &str) -> Option<HeaderValue> {
    if is_plain(value) {
        return HeaderValue::from_str(value).ok();
    }
    HeaderValue::try_from(encode_header_value(value)).ok()
}

/// The `params.arguments` of a request's JSON text (`null` when it has none).
pub(super) fn arguments_of(body: &[u8]) -> Value {
    #[derive(Deserialize)]
    struct Body {
        params: Args,
    }
    #[derive(Deserialize)]
    struct Args {
        arguments: Option<Value>,
    }
    let body = serde_json::from_slice::<Body>(body).ok();
    body.and_then(|b| b.params.arguments).unwrap_or(Value::Null)
}

/// A header value as MCP 2026-07-28 "Value Encoding" sends it: as it is when it is visible
/// ASCII or spaces and tabs without leading or trailing whitespace (and does not look like the
/// sentinel), else `=?base64?<standard Base64 of its UTF-8>?=`.
pub fn encode_header_value(value: &str) -> String {
    if is_plain(value) {
        return value.to_owned();
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
    format!("=?base64?{encoded}?=")
}

/// Whether a header carries `value` as it is: visible ASCII or spaces and tabs, without
/// leading or trailing whitespace, not looking like the sentinel (see [`encode_header_value`]).
fn is_plain(value: &str) -> bool {
    value
        .bytes()
        .all(|b| (0x20..=0x7e).contains(&b) || b == b'\t')
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="))
}

/// The JSON-RPC error response in an HTTP error answer's `text` when it answers request `id`
/// (a modern server's refusal, see the module doc); `None` for any other text.
pub(super) fn rpc_error_for(text: &str, id: Option<&Value>) -> Option<Vec<u8>> {
    let id = id?;
    let answer: Value = serde_json::from_str(text).ok()?;
    let answers = answer.get("id") == Some(id) && answer.get("error").is_some_and(Value::is_object);
    answers.then(|| text.as_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::era::META_PROTOCOL_VERSION;
    use serde_json::json;

    fn headers(body: Value) -> Vec<(&'static str, String)> {
        let sent = Sent::of(body.to_string().as_bytes());
        let mut list = HeaderMap::new();
        sent.modern_headers(&mut list);
        let names = [super::super::PROTOCOL_VERSION, METHOD, NAME];
        list.iter()
            .map(|(k, v)| {
                let name = names.into_iter().find(|n| k == *n).unwrap();
                (name, v.to_str().unwrap().to_owned())
            })
            .collect()
    }

    #[test]
    fn sent_messages_are_told_apart() {
        let req = Sent::of(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#);
        assert_eq!(req.request_id(), Some(&Value::from(3)));
        let note = Sent::of(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(note.request_id().is_none() && note.is("notifications/initialized"));
        let resp = Sent::of(br#"{"jsonrpc":"2.0","id":"srv-1","result":{}}"#);
        assert!(resp.request_id().is_none());
        // params of another shape still leave id and method readable
        let odd = Sent::of(br#"{"jsonrpc":"2.0","id":4,"method":"x","params":[1,2]}"#);
        assert_eq!(odd.request_id(), Some(&Value::from(4)));
        let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r-7"}});
        let cancel = Sent::of(cancel.to_string().as_bytes());
        assert_eq!(cancel.cancelled_request().as_deref(), Some("\"r-7\""));
    }

    #[test]
    fn modern_requests_get_the_metadata_headers() {
        let meta = json!({META_PROTOCOL_VERSION: "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
        let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
            "params":{"name":"get_weather","arguments":{"a":1},"_meta":meta}});
        assert_eq!(
            headers(call),
            [
                ("mcp-protocol-version", "2026-07-28".to_owned()),
                ("mcp-method", "tools/call".to_owned()),
                ("mcp-name", "get_weather".to_owned()),
            ]
        );
        let read = json!({"jsonrpc":"2.0","id":2,"method":"resources/read",
            "params":{"uri":"file:///é.txt","_meta":meta}});
        let h = headers(read);
        assert_eq!(
            h[2],
            ("mcp-name", "=?base64?ZmlsZTovLy/DqS50eHQ=?=".to_owned())
        );
        let list = json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":meta}});
        assert_eq!(headers(list).len(), 2);
        // The 2025 era: no metadata headers.
        let legacy = json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}});
        assert!(headers(legacy).is_empty());
    }

    #[test]
    fn header_values_are_encoded_as_the_spec_shows() {
        assert_eq!(encode_header_value("us-west1"), "us-west1");
        assert_eq!(
            encode_header_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(
            encode_header_value("line1\nline2"),
            "=?base64?bGluZTEKbGluZTI=?="
        );
        assert_eq!(
            encode_header_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn an_error_answer_is_the_request_s_answer_only_when_it_names_it() {
        let text = r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32022,"message":"x"}}"#;
        assert!(rpc_error_for(text, Some(&json!(5))).is_some());
        assert!(rpc_error_for(text, Some(&json!(6))).is_none());
        let null_id = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"No valid session ID"}}"#;
        assert!(rpc_error_for(null_id, Some(&json!(5))).is_none());
        assert!(rpc_error_for("Not Found", Some(&json!(5))).is_none());
    }
}
