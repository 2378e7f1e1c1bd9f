//! The MCP request headers of the streamable HTTP transport, checked against the body: which
//! era a POST belongs to, the legacy `MCP-Protocol-Version` rule, and the 2026-07-28 request
//! metadata headers. Pure functions over header values and the parsed body.
//!
//! Sources: MCP 2025-11-25 "Transports: Protocol Version Header" (an invalid or unsupported
//! version is 400); MCP 2026-07-28 "Streamable HTTP: Request Metadata" (`MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name` required and equal to the body, else 400 with `HeaderMismatch`
//! -32020; an unsupported version is 400 with `UnsupportedProtocolVersionError` -32022; Base64
//! sentinel `=?base64?…?=` decoded before comparing).

use axum::http::{HeaderMap, StatusCode};
use base64::Engine;
use serde_json::{json, Value};

use crate::era::{self, RequestEra, LEGACY_VERSIONS, MODERN_VERSIONS};
use crate::small_map;

/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Session-Id`.
pub const SESSION_ID: &str = "mcp-session-id";
/// `Mcp-Method`.
pub const METHOD: &str = "mcp-method";
/// `Mcp-Name`.
pub const NAME: &str = "mcp-name";
/// JSON-RPC error code `HeaderMismatch` (MCP 2026-07-28 schema).
pub const HEADER_MISMATCH: i64 = -32020;

/// A request refused before it reaches a session: the HTTP status and the JSON-RPC error
/// object to answer with.
#[derive(Debug, PartialEq)]
pub struct Refusal {
    /// The HTTP status.
    pub status: StatusCode,
    /// The JSON-RPC error object (`code`, `message`, `data`?).
    pub error: Value,
}

impl Refusal {
    /// A 400 with `code` and `message`.
    pub fn bad_request(code: i64, message: impl Into<String>) -> Refusal {
        Refusal {
            status: StatusCode::BAD_REQUEST,
            error: json!({"code": code, "message": message.into()}),
        }
    }
}

/// A header's value as text; `None` when absent or not visible ASCII.
pub fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The `Mcp-Session-Id` a request names: `Ok(None)` when it carries none; a 400 refusal
/// (-32600) when its value is not a session id, which no session can have: a session id is one
/// or more visible ASCII characters, 0x21 to 0x7E (MCP 2025-11-25 "Transports: Session
/// Management"); so is a request that names more than one (which one it means is anybody's
/// guess, as for a repeated `Origin`).
pub fn session_id(headers: &HeaderMap) -> Result<Option<&str>, Refusal> {
    let mut values = headers.get_all(SESSION_ID).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Refusal::bad_request(
            -32600,
            "the request has more than one Mcp-Session-Id header; send the one initialize \
             returned, once",
        ));
    }
    match value.to_str() {
        Ok(id) if !id.is_empty() && id.bytes().all(|b| (0x21..=0x7e).contains(&b)) => Ok(Some(id)),
        _ => Err(Refusal::bad_request(
            -32600,
            "the Mcp-Session-Id header is not a valid session id: a session id is visible \
             ASCII (0x21 to 0x7E); send the one initialize returned",
        )),
    }
}

/// Whether a POSTed message is served statelessly (2026-07-28): its `MCP-Protocol-Version`
/// header names a modern revision; or it is a request (not `initialize`) without an
/// `Mcp-Session-Id` whose header names a revision of neither era (a newer client: it gets the
/// `UnsupportedProtocolVersionError` listing ours) or, with no such header, whose body is
/// modern. A request with `_meta` modern keys and a legacy header is stateless too (and
/// refused as a mismatch).
pub fn is_stateless(headers: &HeaderMap, message: &Value) -> bool {
    let version = header(headers, PROTOCOL_VERSION);
    if version.is_some_and(|v| MODERN_VERSIONS.contains(&v)) {
        return true;
    }
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return false;
    };
    if headers.get(SESSION_ID).is_some() || message.get("id").is_none() || method == "initialize" {
        return false;
    }
    version.is_some_and(|v| !LEGACY_VERSIONS.contains(&v))
        || !matches!(
            era::classify_request(method, message.get("params")),
            RequestEra::Legacy
        )
}

/// The legacy rule: an `MCP-Protocol-Version` header, when present, names a revision we speak.
pub fn check_legacy_version(headers: &HeaderMap) -> Result<(), Refusal> {
    match header(headers, PROTOCOL_VERSION) {
        None => Ok(()),
        Some(v) if LEGACY_VERSIONS.contains(&v) => Ok(()),
        Some(v) => Err(Refusal::bad_request(
            -32600,
            format!(
                "unsupported MCP-Protocol-Version {v:?}; supported: {}",
                LEGACY_VERSIONS.join(", ")
            ),
        )),
    }
}

/// The 2026-07-28 request metadata headers of a request, checked against its body.
///
/// The protocol version is checked first: a version we do not serve statelessly in the body's
/// `_meta` (else one of neither era in the header) is refused with the
/// `UnsupportedProtocolVersionError` (-32022) listing the versions we speak, the same error as
/// over stdio, so that a client retries at one of them. Only then are the headers compared with
/// the body (`HeaderMismatch`, -32020): which headers a request must carry is defined by its
/// protocol version (MCP 2026-07-28 "Versioning: Protocol Version Negotiation"; "Streamable
/// HTTP: Server Validation" has intermediaries check the version before trusting the headers).
pub fn check_modern(headers: &HeaderMap, message: &Value) -> Result<(), Refusal> {
    let mismatch = |text: String| Refusal::bad_request(HEADER_MISMATCH, text);
    let version = header(headers, PROTOCOL_VERSION);
    let body_version = small_map::path(message, &["params", "_meta", era::META_PROTOCOL_VERSION])
        .and_then(Value::as_str);
    let unsupported = body_version
        .filter(|v| !MODERN_VERSIONS.contains(v))
        .or(version.filter(|v| !MODERN_VERSIONS.contains(v) && !LEGACY_VERSIONS.contains(v)));
    if let Some(requested) = unsupported {
        return Err(Refusal {
            status: StatusCode::BAD_REQUEST,
            error: era::unsupported_version(requested),
        });
    }
    let version =
        version.ok_or_else(|| mismatch("the MCP-Protocol-Version header is missing".into()))?;
    if body_version != Some(version) {
        return Err(mismatch(format!(
            "MCP-Protocol-Version header \"{version}\" does not match the body's _meta protocolVersion ({})",
            body_version.map_or("absent".to_owned(), |v| format!("\"{v}\""))
        )));
    }
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    match header(headers, METHOD) {
        Some(m) if m == method => {}
        Some(m) => {
            return Err(mismatch(format!(
                "Mcp-Method header {m:?} does not match the body's method {method:?}"
            )))
        }
        None => return Err(mismatch("the Mcp-Method header is missing".into())),
    }
    check_name(headers, method, message.get("params")).map_err(mismatch)
}

/// `Mcp-Name` for the methods that name a tool, prompt or resource.
fn check_name(headers: &HeaderMap, method: &str, params: Option<&Value>) -> Result<(), String> {
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return Ok(()),
    };
    let Some(body) = params.and_then(|p| p.get(field)).and_then(Value::as_str) else {
        return Ok(());
    };
    let given = match (header(headers, NAME), headers.contains_key(NAME)) {
        (Some(given), _) => given,
        (None, true) => {
            return Err(
                "the Mcp-Name header is not visible ASCII: a name outside ASCII is sent \
                        Base64-encoded as =?base64?…?="
                    .into(),
            )
        }
        (None, false) => return Err("the Mcp-Name header is missing".into()),
    };
    let decoded = decode_sentinel(given).ok_or("the Mcp-Name header is not valid Base64")?;
    if decoded != body {
        return Err(format!(
            "Mcp-Name header {decoded:?} does not match the body's {field} {body:?}"
        ));
    }
    Ok(())
}

/// A header value with the `=?base64?…?=` sentinel decoded (UTF-8); other values as they are.
pub fn decode_sentinel(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(value.to_owned()),
    }
}

/// The HTTP status of a stateless request's JSON answer: 404 for an unknown method (-32601),
/// 400 for the protocol-version, capability and header errors (MCP 2026-07-28 "Streamable
/// HTTP: Request Metadata" and "Backward Compatibility"), else 200.
pub fn status_of_answer(error_code: Option<i64>) -> StatusCode {
    match error_code {
        Some(-32601) => StatusCode::NOT_FOUND,
        Some(code)
            if code == era::UNSUPPORTED_PROTOCOL_VERSION
                || code == era::MISSING_REQUIRED_CLIENT_CAPABILITY
                || code == HEADER_MISMATCH =>
        {
            StatusCode::BAD_REQUEST
        }
        _ => StatusCode::OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, v.parse().unwrap());
        }
        map
    }

    fn modern_call(name: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": name, "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}})
    }

    #[test]
    fn a_request_is_stateless_by_its_header_or_its_body() {
        let call = modern_call("echo");
        assert!(is_stateless(
            &headers(&[(PROTOCOL_VERSION, "2026-07-28")]),
            &call
        ));
        assert!(is_stateless(&HeaderMap::new(), &call));
        assert!(!is_stateless(&headers(&[(SESSION_ID, "abc")]), &call));
        let legacy = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        assert!(!is_stateless(&HeaderMap::new(), &legacy));
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
        assert!(!is_stateless(&HeaderMap::new(), &init));
    }

    #[test]
    fn modern_headers_must_match_the_body() {
        let call = modern_call("echo");
        let good = [
            (PROTOCOL_VERSION, "2026-07-28"),
            (METHOD, "tools/call"),
            (NAME, "echo"),
        ];
        assert_eq!(check_modern(&headers(&good), &call), Ok(()));
        let encoded = [
            (PROTOCOL_VERSION, "2026-07-28"),
            (METHOD, "tools/call"),
            (NAME, "=?base64?ZWNobw==?="),
        ];
        assert_eq!(check_modern(&headers(&encoded), &call), Ok(()));
        for bad in [
            &[(METHOD, "tools/call"), (NAME, "echo")][..],
            &[(PROTOCOL_VERSION, "2026-07-28"), (NAME, "echo")][..],
            &[
                (PROTOCOL_VERSION, "2026-07-28"),
                (METHOD, "tools/list"),
                (NAME, "echo"),
            ][..],
            &[
                (PROTOCOL_VERSION, "2026-07-28"),
                (METHOD, "tools/call"),
                (NAME, "other"),
            ][..],
            &[(PROTOCOL_VERSION, "2026-07-28"), (METHOD, "tools/call")][..],
            &[
                (PROTOCOL_VERSION, "2025-11-25"),
                (METHOD, "tools/call"),
                (NAME, "echo"),
            ][..],
        ] {
            let refusal = check_modern(&headers(bad), &call).unwrap_err();
            assert_eq!(refusal.status, StatusCode::BAD_REQUEST);
            assert_eq!(refusal.error["code"], HEADER_MISMATCH, "{bad:?}");
        }
        let unknown = [(PROTOCOL_VERSION, "2099-01-01"), (METHOD, "tools/call")];
        let refusal = check_modern(&headers(&unknown), &call).unwrap_err();
        assert_eq!(refusal.error["code"], era::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(refusal.error["data"]["supported"][0], "2026-07-28");
    }

    #[test]
    fn an_unsupported_version_is_reported_before_any_header_mismatch() {
        let mut future = modern_call("echo");
        future["params"]["_meta"][era::META_PROTOCOL_VERSION] = json!("2099-01-01");
        let cases: [&[(&'static str, &str)]; 4] = [
            &[
                (PROTOCOL_VERSION, "2099-01-01"),
                (METHOD, "tools/call"),
                (NAME, "echo"),
            ],
            &[(METHOD, "tools/call")],
            &[(PROTOCOL_VERSION, "2026-07-28"), (METHOD, "tools/list")],
            &[(PROTOCOL_VERSION, "2025-11-25")],
        ];
        for given in cases {
            let refusal = check_modern(&headers(given), &future).unwrap_err();
            assert_eq!(refusal.status, StatusCode::BAD_REQUEST);
            assert_eq!(
                refusal.error,
                era::unsupported_version("2099-01-01"),
                "{given:?}"
            );
        }
        // A client of a newer revision without a session is served statelessly, even when its
        // body has no modern `_meta`, so that it learns the versions we speak.
        let bare = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let newer = headers(&[(PROTOCOL_VERSION, "2099-01-01")]);
        assert!(is_stateless(&newer, &bare));
        assert!(is_stateless(&newer, &future));
        let refusal = check_modern(&newer, &bare).unwrap_err();
        assert_eq!(refusal.error["code"], era::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(refusal.error["data"]["requested"], "2099-01-01");
        let in_session = headers(&[(PROTOCOL_VERSION, "2099-01-01"), (SESSION_ID, "abc")]);
        assert!(!is_stateless(&in_session, &bare));
        assert!(!is_stateless(
            &headers(&[(PROTOCOL_VERSION, "2025-11-25")]),
            &bare
        ));
    }

    #[test]
    fn legacy_version_header_is_checked_when_present() {
        assert!(check_legacy_version(&HeaderMap::new()).is_ok());
        assert!(check_legacy_version(&headers(&[(PROTOCOL_VERSION, "2025-11-25")])).is_ok());
        let refusal = check_legacy_version(&headers(&[(PROTOCOL_VERSION, "1999-01-01")]));
        assert_eq!(refusal.unwrap_err().status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn sentinel_values_decode_and_answers_map_to_statuses() {
        assert_eq!(decode_sentinel("plain").as_deref(), Some("plain"));
        assert_eq!(
            decode_sentinel("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(),
            Some("Hello, 世界")
        );
        assert_eq!(decode_sentinel("=?base64?***?="), None);
        assert_eq!(status_of_answer(Some(-32601)), StatusCode::NOT_FOUND);
        assert_eq!(status_of_answer(Some(-32022)), StatusCode::BAD_REQUEST);
        assert_eq!(status_of_answer(Some(-32602)), StatusCode::OK);
        assert_eq!(status_of_answer(None), StatusCode::OK);
    }

    #[test]
    fn a_name_header_outside_ascii_is_said_to_be_so_not_missing() {
        let mut map = HeaderMap::new();
        let value = axum::http::HeaderValue::from_bytes("é".as_bytes()).unwrap();
        map.insert(NAME, value);
        let params = json!({"name": "é"});
        let why = check_name(&map, "tools/call", Some(&params)).unwrap_err();
        assert!(why.contains("not visible ASCII"), "{why}");
        let why = check_name(&HeaderMap::new(), "tools/call", Some(&params)).unwrap_err();
        assert!(why.contains("is missing"), "{why}");
    }
}
