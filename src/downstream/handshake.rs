//! Opening a server: which era it speaks, and what every later request to it must carry.
//!
//! A local server is opened with `initialize` first ([`Order::LegacyFirst`], on purpose against
//! the stdio transport's advice to probe first: a dual-era SDK server running modern refuses
//! its tools' server-to-client requests, see README "Protocol eras"); one that refuses it is
//! probed as below. A remote server is probed first ([`Order::ModernFirst`]).
//!
//! The probe (MCP 2026-07-28 "Transports: stdio, Backward Compatibility"; over HTTP the same
//! request with the request metadata headers, "Transports: Streamable HTTP, Backward
//! Compatibility", where a 4xx without a modern JSON-RPC error body counts as any other
//! error): `server/discover` at
//! the newest modern version first. A `DiscoverResult` naming a modern version we speak makes
//! the server modern; a -32022 naming such a version too (we retry at it); any other error, a
//! result without such a version, or no answer within [`probe_timeout`] makes it legacy, and
//! `initialize` follows. An `initialize` refused with -32022 naming a modern version (a server
//! that answered the probe late and locked itself modern) gets one more probe. A server that
//! names only versions we do not speak fails to start with a reason that lists them.
//!
//! A legacy server's `initialize` answer must be a JSON object whose `protocolVersion` is a
//! version the proxy speaks ([`check_initialize_result`]; MCP 2025-06-18 "Lifecycle:
//! Initialization" and "Version Negotiation": a client that does not support the version a
//! server answers with should disconnect; the proxy treats it as a failed start).
//!
//! The era found holds for the life of that process (servers lock their era on the first
//! request); a restart probes again. Requests to a modern server get the per-request `_meta`
//! keys; requests to a legacy server lose them (`stamped.rs` writes both).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tracing::{debug, info};

use super::{CallError, ClientInit, Connection};
use crate::era::{
    self, LATEST_MODERN_VERSION, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION,
    MODERN_VERSIONS, UNSUPPORTED_PROTOCOL_VERSION,
};

/// Longest wait for the answer to the `server/discover` probe: a third of the server's
/// `startup_timeout_sec`, at most 5 s (legacy servers that ignore unknown requests cost this
/// much start-up time once).
pub fn probe_timeout(startup_timeout: Duration) -> Duration {
    (startup_timeout / 3).min(Duration::from_secs(5))
}

/// The era a server process speaks, found by [`open`].
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEra {
    /// Opened with `initialize`; the negotiated `protocolVersion`.
    Legacy {
        /// The version the server answered `initialize` with.
        version: String,
    },
    /// Answered `server/discover`: requests carry `_meta` with these values.
    Modern(ModernStamp),
}

impl ServerEra {
    /// `modern` or `legacy`.
    pub fn label(&self) -> &'static str {
        match self {
            ServerEra::Legacy { .. } => "legacy",
            ServerEra::Modern(_) => "modern",
        }
    }

    /// The protocol version in use with the server.
    pub fn version(&self) -> &str {
        match self {
            ServerEra::Legacy { version } => version,
            ServerEra::Modern(stamp) => &stamp.version,
        }
    }
}

/// What the `_meta` of every request to a modern server carries unless the request brings its
/// own: the version, the capabilities and clientInfo the client gave when servers started.
#[derive(Debug, Clone, PartialEq)]
pub struct ModernStamp {
    /// The modern protocol version the server accepted.
    pub version: String,
    /// `clientCapabilities` used when a request has none.
    pub capabilities: Value,
    /// `clientInfo` used when a request has none.
    pub client_info: Value,
}

/// What a probe's outcome says about the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// A modern server speaking `version`; the `DiscoverResult` when there was one.
    Modern {
        /// The version to use.
        version: String,
        /// The discover result (`None` after a -32022 that named our version: probe again).
        result: Option<Value>,
    },
    /// Not a modern server we can speak to in the modern era: open it with `initialize`.
    Legacy,
    /// A modern server whose versions we do not speak at all (the reason, naming them).
    Incompatible(String),
}

/// Judges the outcome of a `server/discover` probe (see the module doc).
pub fn judge_probe(outcome: &Result<Result<Value, Value>, CallError>) -> Verdict {
    match outcome {
        Ok(Ok(result)) => match mutual_modern(result.get("supportedVersions")) {
            Some(version) => Verdict::Modern {
                version,
                result: Some(result.clone()),
            },
            None => Verdict::Legacy,
        },
        Ok(Err(error)) => judge_unsupported(error).unwrap_or(Verdict::Legacy),
        Err(_) => Verdict::Legacy,
    }
}

/// A -32022 error's meaning: our modern version is in its list (`Modern` without a result),
/// only versions we do not speak (`Incompatible`), or legacy versions (`Legacy`); `None` for
/// any other error.
pub fn judge_unsupported(error: &Value) -> Option<Verdict> {
    if error.get("code").and_then(Value::as_i64) != Some(UNSUPPORTED_PROTOCOL_VERSION) {
        return None;
    }
    let supported = error.pointer("/data/supported");
    if let Some(version) = mutual_modern(supported) {
        return Some(Verdict::Modern {
            version,
            result: None,
        });
    }
    let list: Vec<&str> = supported
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if list.iter().any(|v| era::LEGACY_VERSIONS.contains(v)) {
        return Some(Verdict::Legacy);
    }
    Some(Verdict::Incompatible(format!(
        "the server speaks only protocol versions {list:?}; mcp-envelope speaks {:?}",
        era::supported_versions()
    )))
}

/// The newest version of [`MODERN_VERSIONS`] in a `supportedVersions`/`supported` list.
fn mutual_modern(list: Option<&Value>) -> Option<String> {
    let list = list?.as_array()?;
    MODERN_VERSIONS
        .iter()
        .rev()
        .find(|v| list.iter().any(|s| s.as_str() == Some(v)))
        .map(|v| (*v).to_owned())
}

/// The params of a `server/discover` probe at `version` for the client `client`.
pub fn discover_params(client: &ClientInit, version: &str) -> Value {
    json!({ "_meta": {
        META_PROTOCOL_VERSION: version,
        META_CLIENT_CAPABILITIES: client.capabilities,
        META_CLIENT_INFO: client.client_info,
    }})
}

/// The params to send for a request to a server in `era` (`None` before the era is known):
/// `Some(new params)` when they must change, `None` to send them as they are. A modern server
/// gets `_meta` with our version (always) and the stamp's capabilities and clientInfo (unless
/// the request carries the client's own); a legacy server gets no modern `_meta` keys. The
/// rule as a copy, kept as the model the line writers are tested against: requests are
/// written from [`super::stamped::Stamped`] and [`super::stamped::Stripped`] without it.
#[cfg(test)]
pub fn prepare_params(era: Option<&ServerEra>, params: Option<&Value>) -> Option<Value> {
    match era? {
        ServerEra::Modern(stamp) => {
            let stamped = super::stamped::Stamped { params, stamp };
            Some(serde_json::to_value(stamped).expect("params always serialize"))
        }
        ServerEra::Legacy { .. } => {
            let meta = crate::small_map::member(params?, "_meta")?.as_object()?;
            let modern = [
                META_PROTOCOL_VERSION,
                META_CLIENT_CAPABILITIES,
                META_CLIENT_INFO,
                era::META_LOG_LEVEL,
            ];
            if !modern.iter().any(|k| crate::small_map::contains(meta, k)) {
                return None;
            }
            let mut params = params?.clone();
            let meta = params["_meta"].as_object_mut()?;
            meta.retain(|k, _| !modern.contains(&k.as_str()));
            if meta.is_empty() {
                params.as_object_mut()?.remove("_meta");
            }
            Some(params)
        }
    }
}

/// Whether a client notification `method` may go to a server in `era`: the modern era dropped
/// `notifications/initialized`, `notifications/roots/list_changed` and client progress.
pub fn notification_allowed(era: Option<&ServerEra>, method: &str) -> bool {
    !matches!(era, Some(ServerEra::Modern(_)))
        || !matches!(
            method,
            "notifications/initialized"
                | "notifications/roots/list_changed"
                | "notifications/progress"
        )
}

/// Which era [`open`] tries first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// `server/discover` first (remote servers): a dual-era server runs modern.
    ModernFirst,
    /// `initialize` first (local servers): a dual-era server runs legacy, so that its
    /// server-to-client requests (the Python SDK's `create_message`, `elicit`, `list_roots`,
    /// which the SDK refuses in the modern era) work; a server that refuses `initialize`
    /// (a modern-only one answers -32022) is probed with `server/discover` next.
    LegacyFirst,
}

/// Opens a freshly started server or a new connection to a remote one (see the module doc):
/// stores its era and its `initialize`/`discover` result on `conn`. `Err` is the reason the
/// start failed.
pub async fn open(
    conn: &Connection,
    client: &ClientInit,
    startup_timeout: Duration,
    order: Order,
) -> Result<(), String> {
    let mut version = LATEST_MODERN_VERSION.to_owned();
    if order == Order::LegacyFirst {
        match initialize(conn, client, startup_timeout).await {
            Ok(None) => return Ok(()),
            Ok(Some(v)) => version = v,
            Err(reason) if conn.is_closed() => return Err(reason),
            Err(reason) => {
                debug!(server = %conn.server(), %reason, "initialize refused: probing server/discover")
            }
        }
    }
    for _attempt in 0..2 {
        let probe = conn
            .request(
                "server/discover",
                Some(&discover_params(client, &version)),
                probe_timeout(startup_timeout),
                &mut |_| {},
            )
            .await;
        if let Err(CallError::Exited(reason)) = &probe {
            return Err(format!("server/discover failed: {reason}"));
        }
        match judge_probe(&probe) {
            Verdict::Modern {
                version: v,
                result: Some(result),
            } => {
                adopt_modern(conn, client, v, result);
                return Ok(());
            }
            Verdict::Modern { version: v, .. } => version = v,
            Verdict::Incompatible(reason) => return Err(reason),
            Verdict::Legacy => {
                debug!(server = %conn.server(), outcome = ?probe.as_ref().map(|r| r.as_ref().err()), "server/discover probe: legacy server");
                match initialize(conn, client, startup_timeout).await? {
                    None => return Ok(()),
                    Some(v) => version = v,
                }
            }
        }
    }
    Err("the server refused both server/discover and initialize".into())
}

/// Sends `initialize` and `notifications/initialized`; `Ok(Some(version))` when the server
/// refused with -32022 naming a modern version we speak (probe again at it).
async fn initialize(
    conn: &Connection,
    client: &ClientInit,
    timeout: Duration,
) -> Result<Option<String>, String> {
    let answer = conn
        .request(
            "initialize",
            Some(&json!({
                "protocolVersion": client.protocol_version,
                "capabilities": client.capabilities,
                "clientInfo": client.client_info,
            })),
            timeout,
            &mut |_| {},
        )
        .await
        .map_err(|e| format!("initialize failed: {e}"))?;
    let init = match answer {
        Ok(init) => init,
        Err(error) => {
            return match judge_unsupported(&error) {
                Some(Verdict::Modern { version, .. }) => Ok(Some(version)),
                Some(Verdict::Incompatible(reason)) => Err(reason),
                _ => Err(format!("initialize was refused: {error}")),
            }
        }
    };
    check_initialize_result(&init)?;
    let version = init
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or(&client.protocol_version)
        .to_owned();
    *conn.initialize_result.write().unwrap() = init;
    let _ = conn.era.set(ServerEra::Legacy { version });
    conn.notify("notifications/initialized", None);
    Ok(None)
}

fn adopt_modern(conn: &Connection, client: &ClientInit, version: String, result: Value) {
    info!(server = %conn.server(), %version, "modern server (answered server/discover)");
    *conn.initialize_result.write().unwrap() = result;
    let _ = conn.era.set(ServerEra::Modern(ModernStamp {
        version,
        capabilities: client.capabilities.clone(),
        client_info: client.client_info.clone(),
    }));
}

/// How long our `subscriptions/listen` request to a modern server may stay open: for the
/// life of the process, in practice.
pub const LISTEN_FOREVER: Duration = Duration::from_secs(365 * 24 * 3600);

/// The `notifications` filter of a `subscriptions/listen` request for the list changes a
/// server's capabilities (`ServerCapabilities` of its discover result) announce
/// (`tools/prompts/resources.listChanged`); `None` when it announces none (MCP 2026-07-28
/// "Basic: Patterns: Subscriptions").
pub fn listen_filter(capabilities: &Value) -> Option<Value> {
    let mut filter = Map::new();
    for (capability, key) in [
        ("tools", "toolsListChanged"),
        ("prompts", "promptsListChanged"),
        ("resources", "resourcesListChanged"),
    ] {
        if capabilities.pointer(&format!("/{capability}/listChanged")) == Some(&Value::Bool(true)) {
            filter.insert(key.into(), Value::Bool(true));
        }
    }
    (!filter.is_empty()).then(|| Value::Object(filter))
}

/// Opens a `subscriptions/listen` stream to a modern server that announces list changes, so
/// that its `notifications/*/list_changed` reach us (a modern server sends them nowhere else).
/// The request stays pending until the process ends; a restart opens a new one.
pub fn listen_for_changes(conn: &Arc<Connection>) {
    if !matches!(conn.era(), Some(ServerEra::Modern(_))) {
        return;
    }
    let capabilities = conn
        .initialize_result
        .read()
        .unwrap()
        .get("capabilities")
        .cloned();
    let Some(filter) = capabilities.as_ref().and_then(listen_filter) else {
        return;
    };
    let conn = conn.clone();
    tokio::spawn(async move {
        let params = json!({ "notifications": filter });
        let end = conn
            .request(
                "subscriptions/listen",
                Some(&params),
                LISTEN_FOREVER,
                &mut |_| {},
            )
            .await;
        debug!(server = %conn.server(), ?end, "subscriptions/listen ended");
    });
}

/// `Err` with the reason when `result` (the `result` of an `initialize` response) is not an
/// object or names a protocol version outside [`era::LEGACY_VERSIONS`].
pub fn check_initialize_result(result: &Value) -> Result<(), String> {
    let Some(obj) = result.as_object() else {
        return Err("its initialize result is not a JSON object".into());
    };
    match obj.get("protocolVersion") {
        Some(Value::String(v)) if era::LEGACY_VERSIONS.contains(&v.as_str()) => Ok(()),
        Some(Value::String(v)) => Err(format!(
            "it answered initialize with protocolVersion {v:?}, which mcp-envelope does not speak ({})",
            era::LEGACY_VERSIONS.join(", ")
        )),
        Some(_) => Err("its initialize result's protocolVersion is not a string".into()),
        None => Err("its initialize result has no protocolVersion".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_objects_with_a_supported_version_pass() {
        assert!(check_initialize_result(&json!({"protocolVersion": "2025-06-18"})).is_ok());
        for bad in [
            json!("not an object"),
            json!({"protocolVersion": "1999-01-01"}),
            json!({"protocolVersion": 20250618}),
            json!({}),
        ] {
            assert!(check_initialize_result(&bad).is_err(), "{bad}");
        }
    }

    fn stamp() -> ServerEra {
        ServerEra::Modern(ModernStamp {
            version: "2026-07-28".into(),
            capabilities: json!({"sampling": {}}),
            client_info: json!({"name": "c", "version": "1"}),
        })
    }

    #[test]
    fn discover_results_and_errors_decide_the_era() {
        let ok = |r: Value| judge_probe(&Ok(Ok(r)));
        assert!(matches!(
            ok(json!({"supportedVersions": ["2026-07-28"], "capabilities": {}})),
            Verdict::Modern { version, result: Some(_) } if version == "2026-07-28"
        ));
        assert_eq!(
            ok(json!({"supportedVersions": ["2025-11-25"]})),
            Verdict::Legacy
        );
        assert_eq!(ok(json!({})), Verdict::Legacy);
        let err = |e: Value| judge_probe(&Ok(Err(e)));
        assert_eq!(
            err(json!({"code": -32601, "message": "Method not found"})),
            Verdict::Legacy
        );
        assert_eq!(
            err(json!({"code": -32602, "message": "x"})),
            Verdict::Legacy
        );
        assert!(matches!(
            err(json!({"code": -32022, "message": "x", "data": {"supported": ["2026-07-28"]}})),
            Verdict::Modern { result: None, .. }
        ));
        assert_eq!(
            err(json!({"code": -32022, "message": "x", "data": {"supported": ["2025-06-18"]}})),
            Verdict::Legacy
        );
        assert!(matches!(
            err(json!({"code": -32022, "message": "x", "data": {"supported": ["2031-01-01"]}})),
            Verdict::Incompatible(r) if r.contains("2031-01-01")
        ));
        assert_eq!(
            judge_probe(&Err(CallError::Timeout(Duration::from_secs(1)))),
            Verdict::Legacy
        );
    }

    #[test]
    fn modern_servers_get_the_meta_keys() {
        let era = stamp();
        let p = prepare_params(Some(&era), None).unwrap();
        assert_eq!(p["_meta"][META_PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(
            p["_meta"][META_CLIENT_CAPABILITIES],
            json!({"sampling": {}})
        );
        // The client's own capabilities and clientInfo are kept; other keys too.
        let own = json!({"name": "t", "_meta": {
            META_CLIENT_CAPABILITIES: {"elicitation": {}}, META_CLIENT_INFO: {"name": "x", "version": "2"},
            "progressToken": 7, era::META_LOG_LEVEL: "info"}});
        let p = prepare_params(Some(&era), Some(&own)).unwrap();
        assert_eq!(
            p["_meta"][META_CLIENT_CAPABILITIES],
            json!({"elicitation": {}})
        );
        assert_eq!(p["_meta"][META_CLIENT_INFO]["name"], "x");
        assert_eq!(p["_meta"]["progressToken"], 7);
        assert_eq!(p["_meta"][era::META_LOG_LEVEL], "info");
        assert_eq!(p["name"], "t");
    }

    #[test]
    fn legacy_servers_lose_the_modern_keys_only() {
        let era = ServerEra::Legacy {
            version: "2025-11-25".into(),
        };
        let plain = json!({"name": "t", "_meta": {"progressToken": 1}});
        assert_eq!(prepare_params(Some(&era), Some(&plain)), None);
        assert_eq!(prepare_params(None, Some(&plain)), None);
        let modern = json!({"name": "t", "_meta": {"progressToken": 1, META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}});
        assert_eq!(prepare_params(Some(&era), Some(&modern)).unwrap(), plain);
        let only = json!({"name": "t", "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}});
        assert_eq!(
            prepare_params(Some(&era), Some(&only)).unwrap(),
            json!({"name": "t"})
        );
    }

    #[test]
    fn listen_asks_for_the_announced_changes() {
        let caps = json!({"tools": {"listChanged": true}, "prompts": {}, "resources": {"listChanged": true}});
        assert_eq!(
            listen_filter(&caps),
            Some(json!({"toolsListChanged": true, "resourcesListChanged": true}))
        );
        assert_eq!(listen_filter(&json!({"tools": {}})), None);
    }

    #[test]
    fn removed_notifications_stay_away_from_modern_servers() {
        let era = stamp();
        assert!(!notification_allowed(
            Some(&era),
            "notifications/initialized"
        ));
        assert!(!notification_allowed(
            Some(&era),
            "notifications/roots/list_changed"
        ));
        assert!(notification_allowed(Some(&era), "notifications/cancelled"));
        assert!(notification_allowed(
            None,
            "notifications/roots/list_changed"
        ));
    }
}
