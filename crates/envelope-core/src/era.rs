//! What differs between the two eras of MCP, as pure functions over JSON values.
//!
//! - **Legacy** revisions (2024-11-05 … 2025-11-25) open a session with `initialize`; the
//!   negotiated version holds for the whole connection.
//! - **Modern** revisions (2026-07-28) have no handshake: every request carries its protocol
//!   version and the client's capabilities in `_meta` (MCP 2026-07-28 "Basic: General fields,
//!   `_meta`"), every result carries `resultType`, and list and read results carry the caching
//!   hints `ttlMs` and `cacheScope` ("Server: Utilities: Caching").
//!
//! [`classify_request`] decides which era a client request belongs to and validates a modern
//! request's `_meta`; [`stamp_result`] adds what a modern result must carry; the constants name
//! the reserved `_meta` keys and the error codes of the 2026-07-28 schema.

use serde_json::{json, Map, Value};

/// The modern protocol revisions we speak, oldest first.
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];
/// The newest modern revision (what we ask a server for when probing with `server/discover`).
pub const LATEST_MODERN_VERSION: &str = "2026-07-28";
/// The legacy revisions we speak through `initialize`, oldest first.
pub const LEGACY_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// `_meta` key: the protocol version of one request (required on modern requests).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for one request (required on modern requests).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's `Implementation` (name, version), optional.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the lowest log level the client wants for one request; without it a server
/// sends no `notifications/message` for the request.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key on notifications of a `subscriptions/listen` stream: the JSON-RPC id of the
/// `subscriptions/listen` request.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key on results: the server's `Implementation`.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// JSON-RPC error code: the request's protocol version is not supported; `data` is
/// `{supported: [versions], requested}` (MCP 2026-07-28 `UnsupportedProtocolVersionError`).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// JSON-RPC error code: the request needs a client capability it did not declare; `data` is
/// `{requiredCapabilities}` (MCP 2026-07-28 `MissingRequiredClientCapabilityError`).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;

/// Methods whose complete results carry `ttlMs` and `cacheScope` (MCP 2026-07-28 "Caching:
/// Cacheable Results").
pub const CACHEABLE_METHODS: [&str; 6] = [
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// Methods that exist only in the modern era (a request for one is modern even without `_meta`,
/// and then malformed).
pub const MODERN_ONLY_METHODS: [&str; 2] = ["server/discover", "subscriptions/listen"];

/// Methods the modern era removed (MCP 2026-07-28 changelog: `ping`, `logging/setLevel`,
/// `resources/subscribe`/`unsubscribe`, the `initialize` handshake).
pub const REMOVED_IN_MODERN: [&str; 4] = [
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// The per-request fields of a modern request's `_meta`.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion`, one of [`MODERN_VERSIONS`].
    pub protocol_version: String,
    /// `io.modelcontextprotocol/clientCapabilities`: an object (`{}` declares nothing optional).
    pub capabilities: Value,
    /// `io.modelcontextprotocol/clientInfo`, when given.
    pub client_info: Option<Value>,
    /// `io.modelcontextprotocol/logLevel`, when given.
    pub log_level: Option<String>,
}

impl RequestMeta {
    /// Whether the client declared capability `name` (`sampling`, `elicitation`, `roots`) in
    /// this request.
    pub fn declares(&self, name: &str) -> bool {
        self.capabilities.get(name).is_some_and(|c| !c.is_null())
    }
}

/// Which era a client request belongs to.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestEra {
    /// No modern `_meta` keys and not a modern-only method: served in the session `initialize`
    /// opened.
    Legacy,
    /// A well-formed modern request.
    Modern(RequestMeta),
    /// A modern request that cannot be served: the JSON-RPC error object to answer with
    /// (-32602 for a missing or malformed key, -32022 for a version we do not speak).
    Invalid(Value),
}

/// Decides the era of a client request and validates a modern one (MCP 2026-07-28 "Basic:
/// General fields, `_meta`": a request missing a required key is rejected with -32602;
/// "Versioning": an unsupported version with -32022 listing the supported ones).
///
/// A request is modern when its `params._meta` holds any `io.modelcontextprotocol/` key of the
/// per-request fields, or when its method exists only in the modern era; `initialize` is
/// always legacy.
pub fn classify_request(method: &str, params: Option<&Value>) -> RequestEra {
    if method == "initialize" {
        return RequestEra::Legacy;
    }
    let meta = params
        .and_then(|p| crate::small_map::member(p, "_meta"))
        .and_then(Value::as_object);
    let has_modern_key = meta.is_some_and(|m| {
        crate::small_map::contains(m, META_PROTOCOL_VERSION)
            || crate::small_map::contains(m, META_CLIENT_CAPABILITIES)
    });
    if !has_modern_key && !MODERN_ONLY_METHODS.contains(&method) {
        return RequestEra::Legacy;
    }
    match parse_meta(meta) {
        Ok(meta) => RequestEra::Modern(meta),
        Err(error) => RequestEra::Invalid(error),
    }
}

/// Reads the per-request fields of a modern `_meta` object (see [`classify_request`]); the
/// members are found by a scan ([`crate::small_map`]), not hashed: a `_meta` has a few.
pub fn parse_meta(meta: Option<&Map<String, Value>>) -> Result<RequestMeta, Value> {
    let empty = Map::new();
    let meta = meta.unwrap_or(&empty);
    let version = match crate::small_map::get(meta, META_PROTOCOL_VERSION) {
        Some(Value::String(v)) => v.clone(),
        Some(_) => return Err(invalid_params(&format!("`_meta` `{META_PROTOCOL_VERSION}` must be a string"))),
        None => return Err(invalid_params(&format!(
            "missing `_meta` `{META_PROTOCOL_VERSION}`: a request of MCP 2026-07-28 carries its protocol version and `{META_CLIENT_CAPABILITIES}` in `params._meta` (or open a session with `initialize`)"
        ))),
    };
    if !MODERN_VERSIONS.contains(&version.as_str()) {
        return Err(unsupported_version(&version));
    }
    let capabilities = match crate::small_map::get(meta, META_CLIENT_CAPABILITIES) {
        Some(c @ Value::Object(_)) => c.clone(),
        Some(_) => return Err(invalid_params(&format!("`_meta` `{META_CLIENT_CAPABILITIES}` must be an object"))),
        None => return Err(invalid_params(&format!(
            "missing `_meta` `{META_CLIENT_CAPABILITIES}` (required on every MCP 2026-07-28 request; `{{}}` declares none)"
        ))),
    };
    let client_info = match crate::small_map::get(meta, META_CLIENT_INFO) {
        None | Some(Value::Null) => None,
        Some(i @ Value::Object(_)) => Some(i.clone()),
        Some(_) => {
            return Err(invalid_params(&format!(
                "`_meta` `{META_CLIENT_INFO}` must be an object"
            )))
        }
    };
    let log_level = match crate::small_map::get(meta, META_LOG_LEVEL) {
        None | Some(Value::Null) => None,
        Some(Value::String(l)) if log_level_rank(l).is_some() => Some(l.clone()),
        Some(other) => {
            return Err(invalid_params(&format!(
                "`_meta` `{META_LOG_LEVEL}` {other} is not a log level"
            )))
        }
    };
    Ok(RequestMeta {
        protocol_version: version,
        capabilities,
        client_info,
        log_level,
    })
}

/// Every protocol version we speak, modern first: the `supported` list of -32022 and of
/// `server/discover`'s `supportedVersions`.
pub fn supported_versions() -> Vec<&'static str> {
    MODERN_VERSIONS
        .iter()
        .rev()
        .chain(LEGACY_VERSIONS.iter().rev())
        .copied()
        .collect()
}

/// The -32022 error object for a request that asked for `requested` (per request: its
/// `_meta` or its `MCP-Protocol-Version` header). `data.supported` lists every version we
/// speak ([`supported_versions`]); a legacy one among them is spoken only in a session opened
/// with `initialize`, and the message says so when it is the one asked for.
pub fn unsupported_version(requested: &str) -> Value {
    let message = match LEGACY_VERSIONS.contains(&requested) {
        true => format!(
            "Unsupported protocol version: {requested} for a request on its own (per-request \
             versions: {}); {requested} is spoken in a session opened with `initialize`",
            MODERN_VERSIONS.join(", ")
        ),
        false => format!("Unsupported protocol version: {requested}"),
    };
    json!({
        "code": UNSUPPORTED_PROTOCOL_VERSION,
        "message": message,
        "data": { "supported": supported_versions(), "requested": requested },
    })
}

/// A -32602 (Invalid params) error object.
pub fn invalid_params(message: &str) -> Value {
    json!({ "code": -32602, "message": message })
}

/// [`server_info`] as compact JSON text, as `serde_json` writes it (the version, a semantic
/// version, has nothing to escape).
pub const SERVER_INFO_JSON: &str = concat!(
    r#"{"name":"mcp-envelope","version":""#,
    env!("CARGO_PKG_VERSION"),
    r#""}"#
);

/// Our `Implementation` for `serverInfo` (name `mcp-envelope`, the crate's version).
pub fn server_info() -> Value {
    json!({ "name": "mcp-envelope", "version": env!("CARGO_PKG_VERSION") })
}

/// Adds to a result object what a modern result of `method` must carry: `resultType`
/// (`"complete"` unless the result says otherwise), `ttlMs` (0: our lists change when a server
/// restarts or announces a change) and `cacheScope` (`"private"`: they depend on this user's
/// config) on complete results of [`CACHEABLE_METHODS`] that lack them, and our `serverInfo` in
/// `_meta`. Values already present are kept, except `serverInfo` (the client talks to us).
pub fn stamp_result(method: &str, result: &mut Map<String, Value>) {
    let result_type = result
        .entry("resultType")
        .or_insert_with(|| Value::from("complete"));
    let complete = result_type == "complete";
    if complete && CACHEABLE_METHODS.contains(&method) {
        result.entry("ttlMs").or_insert_with(|| Value::from(0));
        result
            .entry("cacheScope")
            .or_insert_with(|| Value::from("private"));
    }
    let meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(META_SERVER_INFO.into(), server_info());
    }
}

/// Takes a downstream server's [`META_SERVER_INFO`] out of a result the proxy passes on
/// (`resources/read`, `prompts/get`, `completion/complete`, ...): the member names the server
/// that answers (MCP 2026-07-28 "Base Protocol: General fields, `_meta`, Per-response protocol
/// fields"), and to the client that is the proxy: a 2026-07-28 client gets ours
/// ([`stamp_result`]), a 2025-era client none (those revisions reserve the
/// `io.modelcontextprotocol/` prefix without defining the key). Every other `_meta` member is
/// kept; a `_meta` that held only that member goes. Anything but an object is left alone.
pub fn drop_server_info(result: &mut Value) {
    let Some(result) = result.as_object_mut() else {
        return;
    };
    let Some(Value::Object(meta)) = result.get_mut("_meta") else {
        return;
    };
    if meta.remove(META_SERVER_INFO).is_some() && meta.is_empty() {
        result.remove("_meta");
    }
}

/// Takes out of a result of `method` that a 2026-07-28 server answered the members only MCP
/// 2026-07-28 defines, for a client that negotiated a 2025 revision: `resultType` (2026-07-28
/// schema `Result`; a result without it means `"complete"`, "Key Changes" 8), and on the
/// results of [`CACHEABLE_METHODS`] `ttlMs` and `cacheScope` (`CacheableResult`, "Key Changes"
/// minor change 5). The 2025-11-25 schema has none of them, and the 2026-07-28 schema adds no
/// other member to a result the proxy passes on (`ListToolsResult`, `ListResourcesResult`,
/// `ListResourceTemplatesResult`, `ReadResourceResult`, `ListPromptsResult`,
/// `GetPromptResult`, `CompleteResult`, `CallToolResult`, their items and content blocks; its
/// `_meta` key `io.modelcontextprotocol/serverInfo` goes for every client,
/// [`drop_server_info`]). Every other member stays, known or not: a proxy passes on what it
/// does not understand; so do `ttlMs` and `cacheScope` on other methods' results (no schema
/// defines them there: the server's own). A result whose `resultType` is not `"complete"` (an
/// `InputRequiredResult`) is left whole: without it, it would read as a finished result.
/// Anything but an object is left alone.
pub fn drop_modern_result_members(method: &str, result: &mut Value) {
    let Some(result) = result.as_object_mut() else {
        return;
    };
    match result.get("resultType") {
        Some(t) if t != "complete" => return,
        Some(_) => {
            result.remove("resultType");
        }
        None => {}
    }
    if CACHEABLE_METHODS.contains(&method) {
        result.remove("ttlMs");
        result.remove("cacheScope");
    }
}

/// [`stamp_result`] on a whole JSON-RPC response given as JSON text; an error response, or a
/// text that is not a response object, comes back unchanged.
pub fn stamp_response_json(method: &str, json: Vec<u8>) -> Vec<u8> {
    let Ok(Value::Object(mut response)) = serde_json::from_slice::<Value>(&json) else {
        return json;
    };
    match response.get_mut("result") {
        Some(Value::Object(result)) => stamp_result(method, result),
        _ => return json,
    }
    serde_json::to_vec(&Value::Object(response)).unwrap_or(json)
}

/// The rank of an MCP log level (`debug` 0 … `emergency` 7; RFC 5424 severities as MCP
/// "Utilities: Logging" lists them); `None` for anything else.
pub fn log_level_rank(level: &str) -> Option<u8> {
    const LEVELS: [&str; 8] = [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ];
    LEVELS.iter().position(|l| *l == level).map(|i| i as u8)
}

/// Whether a log message at `level` reaches a request that asked for `wanted` (at or above it).
pub fn log_level_passes(level: &str, wanted: &str) -> bool {
    match (log_level_rank(level), log_level_rank(wanted)) {
        (Some(level), Some(wanted)) => level >= wanted,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_version_asked_per_request_is_told_to_open_a_session() {
        let e = unsupported_version("2025-11-25");
        assert_eq!(e["code"], UNSUPPORTED_PROTOCOL_VERSION);
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains("session opened with `initialize`"),
            "{message}"
        );
        assert!(e["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2025-11-25")));
        let other = unsupported_version("2099-01-01");
        assert_eq!(other["message"], "Unsupported protocol version: 2099-01-01");
    }

    #[test]
    fn the_server_info_text_is_the_server_info_serialized() {
        assert_eq!(
            SERVER_INFO_JSON,
            serde_json::to_string(&server_info()).unwrap()
        );
    }

    fn meta(pairs: Value) -> Value {
        json!({ "_meta": pairs })
    }

    fn modern() -> Value {
        meta(json!({
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: { "elicitation": {} },
            META_CLIENT_INFO: { "name": "c", "version": "1" },
        }))
    }

    #[test]
    fn requests_without_modern_keys_are_legacy() {
        assert_eq!(classify_request("tools/list", None), RequestEra::Legacy);
        let p = json!({ "_meta": { "progressToken": 1 } });
        assert_eq!(classify_request("tools/call", Some(&p)), RequestEra::Legacy);
        assert_eq!(
            classify_request("initialize", Some(&modern())),
            RequestEra::Legacy
        );
    }

    #[test]
    fn a_full_modern_meta_is_read() {
        let RequestEra::Modern(m) = classify_request("tools/list", Some(&modern())) else {
            panic!("not modern");
        };
        assert_eq!(m.protocol_version, "2026-07-28");
        assert!(m.declares("elicitation"));
        assert!(!m.declares("sampling"));
        assert_eq!(m.client_info.unwrap()["name"], "c");
    }

    #[test]
    fn missing_keys_are_invalid_params() {
        let no_caps = meta(json!({ META_PROTOCOL_VERSION: "2026-07-28" }));
        let RequestEra::Invalid(e) = classify_request("tools/list", Some(&no_caps)) else {
            panic!("accepted");
        };
        assert_eq!(e["code"], -32602);
        assert!(e["message"]
            .as_str()
            .unwrap()
            .contains(META_CLIENT_CAPABILITIES));
        let no_version = meta(json!({ META_CLIENT_CAPABILITIES: {} }));
        let RequestEra::Invalid(e) = classify_request("tools/call", Some(&no_version)) else {
            panic!("accepted");
        };
        assert_eq!(e["code"], -32602);
        // A modern-only method without any `_meta` is a modern request missing its keys.
        let RequestEra::Invalid(e) = classify_request("server/discover", None) else {
            panic!("accepted");
        };
        assert_eq!(e["code"], -32602);
    }

    #[test]
    fn unknown_versions_get_the_supported_list() {
        let p = meta(json!({ META_PROTOCOL_VERSION: "2099-01-01", META_CLIENT_CAPABILITIES: {} }));
        let RequestEra::Invalid(e) = classify_request("tools/list", Some(&p)) else {
            panic!("accepted");
        };
        assert_eq!(e["code"], UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(e["data"]["requested"], "2099-01-01");
        assert_eq!(e["data"]["supported"][0], "2026-07-28");
        assert!(e["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2025-11-25")));
        // A legacy version in a modern envelope is not served statelessly either.
        let p = meta(json!({ META_PROTOCOL_VERSION: "2025-11-25", META_CLIENT_CAPABILITIES: {} }));
        assert!(
            matches!(classify_request("tools/list", Some(&p)), RequestEra::Invalid(e) if e["code"] == UNSUPPORTED_PROTOCOL_VERSION)
        );
    }

    #[test]
    fn wrong_types_are_invalid_params() {
        for bad in [
            json!({ META_PROTOCOL_VERSION: 2026, META_CLIENT_CAPABILITIES: {} }),
            json!({ META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: [] }),
            json!({ META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}, META_CLIENT_INFO: "x" }),
            json!({ META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}, META_LOG_LEVEL: "loud" }),
        ] {
            let p = meta(bad.clone());
            assert!(
                matches!(classify_request("tools/list", Some(&p)), RequestEra::Invalid(e) if e["code"] == -32602),
                "{bad}"
            );
        }
    }

    #[test]
    fn stamping_adds_result_type_and_cache_hints() {
        let mut r = json!({ "tools": [] }).as_object().unwrap().clone();
        stamp_result("tools/list", &mut r);
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["ttlMs"], 0);
        assert_eq!(r["cacheScope"], "private");
        assert_eq!(r["_meta"][META_SERVER_INFO]["name"], "mcp-envelope");
        let mut call = json!({ "content": [] }).as_object().unwrap().clone();
        stamp_result("tools/call", &mut call);
        assert_eq!(call["resultType"], "complete");
        assert!(!call.contains_key("ttlMs"));
        // Hints a server gave are kept; an interim result gets none.
        let mut read = json!({ "contents": [], "ttlMs": 5000, "cacheScope": "public" });
        stamp_result("resources/read", read.as_object_mut().unwrap());
        assert_eq!(
            (read["ttlMs"].clone(), read["cacheScope"].clone()),
            (json!(5000), json!("public"))
        );
        let mut interim = json!({ "resultType": "input_required", "requestState": "s" });
        stamp_result("resources/read", interim.as_object_mut().unwrap());
        assert!(interim.get("ttlMs").is_none());
    }

    #[test]
    fn a_forwarded_result_loses_only_the_servers_identity() {
        let info = json!({"name": "downstream", "version": "1"});
        let mut both = json!({"contents": [], "_meta": {META_SERVER_INFO: info, "x/trace": 7}});
        drop_server_info(&mut both);
        assert_eq!(both, json!({"contents": [], "_meta": {"x/trace": 7}}));
        let mut only = json!({"messages": [], "_meta": {META_SERVER_INFO: info}});
        drop_server_info(&mut only);
        assert_eq!(only, json!({"messages": []}));
        for mut kept in [
            json!({"_meta": {}}),
            json!({"_meta": 3}),
            json!({}),
            json!(null),
        ] {
            let before = kept.clone();
            drop_server_info(&mut kept);
            assert_eq!(kept, before);
        }
    }

    /// Each kind of result the proxy passes on, as a 2026-07-28 server sends it: a 2025 client
    /// gets it without `resultType`, and the cacheable ones without `ttlMs` and `cacheScope`;
    /// every other member (`nextCursor`, `_meta`, unknown ones) stays.
    #[test]
    fn a_2025_client_gets_results_without_the_members_only_2026_07_28_has() {
        let cache = json!({"ttlMs": 60000, "cacheScope": "public"});
        let kinds = [
            (
                "tools/list",
                json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}], "nextCursor": "c"}),
            ),
            (
                "resources/list",
                json!({"resources": [{"uri": "file:///a", "name": "a"}]}),
            ),
            (
                "resources/templates/list",
                json!({"resourceTemplates": [{"uriTemplate": "file:///{p}", "name": "p"}]}),
            ),
            (
                "resources/read",
                json!({"contents": [{"uri": "file:///a", "text": "x"}]}),
            ),
            ("prompts/list", json!({"prompts": [{"name": "p"}]})),
            (
                "prompts/get",
                json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}),
            ),
            (
                "completion/complete",
                json!({"completion": {"values": ["a"], "hasMore": false}}),
            ),
            (
                "tools/call",
                json!({"content": [{"type": "text", "text": "x"}], "isError": false}),
            ),
            ("no/such_method", json!({"anything": 1})),
        ];
        for (method, legacy) in kinds {
            let mut result = legacy.clone();
            result["resultType"] = json!("complete");
            result["_meta"] = json!({"x/trace": 7});
            result["x-unknown"] = json!(true);
            if CACHEABLE_METHODS.contains(&method) {
                result
                    .as_object_mut()
                    .unwrap()
                    .extend(cache.as_object().unwrap().clone());
            }
            drop_modern_result_members(method, &mut result);
            let mut wanted = legacy;
            wanted["_meta"] = json!({"x/trace": 7});
            wanted["x-unknown"] = json!(true);
            assert_eq!(result, wanted, "{method}");
        }
    }

    /// `ttlMs` and `cacheScope` where no schema defines them are a server's own; an interim
    /// result keeps what says it is one.
    #[test]
    fn other_members_and_interim_results_are_left_alone() {
        let mut own = json!({"completion": {"values": []}, "resultType": "complete", "ttlMs": 5, "cacheScope": "x"});
        drop_modern_result_members("completion/complete", &mut own);
        assert_eq!(
            own,
            json!({"completion": {"values": []}, "ttlMs": 5, "cacheScope": "x"})
        );
        let interim = json!({"resultType": "input_required", "inputRequests": {}, "ttlMs": 0});
        let mut kept = interim.clone();
        drop_modern_result_members("resources/read", &mut kept);
        assert_eq!(kept, interim);
        for mut other in [json!(null), json!([1]), json!("s")] {
            let before = other.clone();
            drop_modern_result_members("tools/list", &mut other);
            assert_eq!(other, before);
        }
    }

    #[test]
    fn stamping_a_response_text_leaves_errors_alone() {
        let err = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}"#.to_vec();
        assert_eq!(stamp_response_json("tools/call", err.clone()), err);
        let ok = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#.to_vec();
        let v: Value = serde_json::from_slice(&stamp_response_json("tools/call", ok)).unwrap();
        assert_eq!(v["result"]["resultType"], "complete");
        assert_eq!(v["id"], 1);
    }

    #[test]
    fn log_levels_compare_by_severity() {
        assert!(log_level_passes("error", "warning"));
        assert!(log_level_passes("info", "info"));
        assert!(!log_level_passes("debug", "info"));
        assert!(!log_level_passes("nonsense", "debug"));
    }
}
