//! The config as written: serde types that reject unknown keys in every table
//! (`deny_unknown_fields`), checked numbers ([`Seconds`]), and the JSON Schema generated from
//! them.

use std::collections::BTreeMap;
use std::fmt;
use std::num::NonZeroUsize;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::codex;
use super::MediaMode;
use crate::budget::{LongRows, TextRows, Tokenizer};
use crate::page_tool::RawPaging;
use crate::settings::PositiveCount;

/// mcp-envelope configuration: the downstream MCP servers to start and how to envelope their
/// tools' results. Settings resolve tool table → server table → `[defaults]` → built-in.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "mcp-envelope configuration")]
pub(super) struct RawConfig {
    /// Settings for every server and tool unless a server or tool table overrides them.
    #[serde(default)]
    pub(super) defaults: RawDefaults,
    /// Optional JSONL transcript of every tools/call.
    pub(super) transcript: Option<RawTranscript>,
    /// The page tool, which answers the rows a truncated result left out.
    pub(super) paging: Option<RawPaging>,
    /// The downstream MCP servers, keyed by name (non-empty, without `__`). Same keys as
    /// Codex's `[mcp_servers.NAME]`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RawServer>")]
    pub(super) mcp_servers: BTreeMap<String, Spanned<RawServer>>,
}

/// Declares a raw config table with the settings every level shares (`[defaults]`, a server
/// table, a tool table) followed by the table's own fields. `$whose` names what the level
/// applies to in the keys' descriptions (they become the JSON Schema's). One declaration keeps
/// the three levels' keys the same; `#[serde(flatten)]` cannot share them, as it does not work
/// with `deny_unknown_fields` (and loses the key path in errors).
macro_rules! table_with_settings {
    (
        whose = $whose:literal;
        $(#[$attr:meta])*
        $vis:vis struct $name:ident {
            $($(#[$fattr:meta])* $fvis:vis $field:ident : $ty:ty),* $(,)?
        }
    ) => {
        $(#[$attr])*
        $vis struct $name {
            #[doc = concat!("Envelope content budget for ", $whose, ", in characters (Unicode scalar values), at least 1. Unset: the next level's (tool, server, defaults); built-in 2000, only for tools without a token_budget.")]
            pub(super) char_budget: Option<PositiveCount>,
            #[doc = concat!("Envelope content budget for ", $whose, ", in tokens of `tokenizer` (at least 1). With char_budget also set, the tighter one wins. Built-in: none.")]
            #[schemars(with = "Option<PositiveCount>")]
            pub(super) token_budget: Option<Spanned<PositiveCount>>,
            #[doc = concat!("Whose tokens token_budget counts for ", $whose, ": \"o200k_base\" or \"cl100k_base\". Built-in: \"o200k_base\".")]
            pub(super) tokenizer: Option<Tokenizer>,
            #[doc = concat!("Text rows (lines or blocks) of ", $whose, " longer than the budget: \"split\" into pieces that fit, or \"keep\" them whole (then left out). Built-in: \"split\".")]
            pub(super) long_rows: Option<LongRows>,
            #[doc = concat!("Plain text of ", $whose, " as one row per line (\"lines\") or per blank-line-separated block (\"blocks\"). Built-in: \"lines\".")]
            pub(super) text_rows: Option<TextRows>,
            #[doc = concat!("Timeout of one tools/call of ", $whose, ", in seconds (integer or float, > 0). Built-in: 60.")]
            pub(super) tool_timeout_sec: Option<Seconds>,
            #[doc = concat!("What to do with image/audio blocks of ", $whose, ". Built-in: \"passthrough\".")]
            pub(super) media: Option<MediaMode>,
            $($(#[$fattr])* $fvis $field: $ty,)*
        }
    };
}

table_with_settings! {
    whose = "every tool";
    /// The `[defaults]` table: every key optional.
    #[derive(Deserialize, Default, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[schemars(rename = "Defaults")]
    pub(super) struct RawDefaults {
        /// Seconds for spawning one server and completing initialize + tools/list (> 0).
        /// Built-in: 20.
        pub(super) startup_timeout_sec: Option<Seconds>,
        /// Restarts in a row before a crashed server is reported `unavailable`. Built-in: 5.
        pub(super) max_restarts: Option<u32>,
        /// Longest JSON-RPC line accepted from the client or a server, in bytes (> 0).
        /// Built-in: 67108864 (64 MiB).
        pub(super) max_message_bytes: Option<NonZeroUsize>,
    }
}

/// The `[transcript]` table.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Transcript")]
pub(super) struct RawTranscript {
    /// Append one JSON line per tools/call to this file (relative to the config file's
    /// directory). No transcript when absent.
    #[schemars(with = "Option<String>")]
    pub(super) path: Option<Spanned<String>>,
    /// Argument keys whose values are stored as "[redacted]". Default: password, passwd,
    /// passphrase, token, secret, api_key, access_key, private_key, authorization, credential,
    /// cookie, jwt.
    pub(super) redact_keys: Option<Vec<String>>,
}

table_with_settings! {
    whose = "this server's tools";
    /// One `[mcp_servers.NAME]` table: a stdio MCP server to start (`command`) or a remote one to
    /// connect to (`url`).
    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[schemars(rename = "Server")]
    #[schemars(extend("oneOf" = [{"required": ["command"]}, {"required": ["url"]}]))]
    pub(super) struct RawServer {
        /// Program to run directly (never through a shell); must not be empty; `${VAR}` expands.
        /// A relative path containing `/` is relative to the config file's directory; a bare name
        /// is looked up in PATH. `~` is not expanded (use `${HOME}`).
        #[schemars(with = "Option<String>")]
        pub(super) command: Option<Spanned<String>>,
        /// A remote server's endpoint (streamable HTTP, or the older HTTP+SSE transport):
        /// an http or https URL; `${VAR}` expands. Instead of `command`.
        #[schemars(with = "Option<String>")]
        pub(super) url: Option<Spanned<String>>,
        /// Remote servers: the environment variable whose value is sent as
        /// `Authorization: Bearer <value>`.
        #[schemars(with = "Option<String>")]
        pub(super) bearer_token_env_var: Option<Spanned<String>>,
        /// Remote servers: headers sent with every request, name -> fixed value.
        #[schemars(with = "Option<BTreeMap<String, String>>")]
        pub(super) http_headers: Option<Spanned<BTreeMap<String, String>>>,
        /// Remote servers: headers sent with every request, name -> the environment variable
        /// holding the value.
        #[schemars(with = "Option<BTreeMap<String, String>>")]
        pub(super) env_http_headers: Option<Spanned<BTreeMap<String, String>>>,
        /// Its arguments; `${VAR}` expands from the proxy's environment (an unset VAR is an error).
        #[serde(default)]
        #[schemars(with = "Vec<String>")]
        pub(super) args: Vec<Spanned<String>>,
        /// Variables added to the child's environment; values may use `${VAR}`.
        #[serde(default)]
        #[schemars(with = "BTreeMap<String, String>")]
        pub(super) env: BTreeMap<String, Spanned<String>>,
        /// Working directory of the child, relative to the config file's directory; `${VAR}`
        /// expands. Default: the proxy's own.
        #[schemars(with = "Option<String>")]
        pub(super) cwd: Option<Spanned<String>>,
        /// `false` keeps the table but starts nothing. Default: true.
        pub(super) enabled: Option<bool>,
        /// Seconds for spawn + initialize + tools/list of this server (> 0).
        pub(super) startup_timeout_sec: Option<Seconds>,
        /// Restarts in a row before this server is reported `unavailable`.
        pub(super) max_restarts: Option<u32>,
        /// Allowlist of the server's own tool names; when given, only these are exposed.
        #[schemars(with = "Option<Vec<String>>")]
        pub(super) enabled_tools: Option<Vec<Spanned<String>>>,
        /// Denylist of the server's own tool names; these are never exposed.
        #[schemars(with = "Option<Vec<String>>")]
        pub(super) disabled_tools: Option<Vec<Spanned<String>>>,
        /// Prepended to the tool names (and prompt names) the client sees: only ASCII letters,
        /// digits, `_`, `-` and `.` (the characters of an MCP tool name), at most 64. Default: "".
        #[schemars(with = "Option<String>")]
        pub(super) tool_prefix: Option<ToolPrefix>,
        /// Allowlist of the server's own prompt names; when given, only these are exposed.
        pub(super) enabled_prompts: Option<Vec<String>>,
        /// Denylist of the server's own prompt names; these are never exposed.
        pub(super) disabled_prompts: Option<Vec<String>>,
        /// Per-tool overrides, keyed by the server's own tool name (which must be exposed).
        #[serde(default)]
        #[schemars(with = "BTreeMap<String, RawTool>")]
        pub(super) tools: BTreeMap<String, Spanned<RawTool>>, // Codex's own keys (config/codex.rs says what each does here).
        /// Codex: variables forwarded from the proxy's environment (servers inherit it whole, so
        /// every one listed is passed). Names, or `{ name, source = "local" }`.
        #[schemars(with = "Option<Vec<codex::EnvVar>>")]
        pub(super) env_vars: Option<Vec<Spanned<codex::EnvVar>>>,
        /// Codex: startup timeout in milliseconds (> 0), used when `startup_timeout_sec` is absent.
        pub(super) startup_timeout_ms: Option<u64>,
        /// Codex: accepted, no effect in the proxy.
        #[allow(dead_code)] // read by Codex, not by the proxy
        pub(super) required: Option<bool>,
        /// Codex: accepted, no effect in the proxy (it serves concurrent calls anyway).
        #[allow(dead_code)] // read by Codex, not by the proxy
        pub(super) supports_parallel_tool_calls: Option<bool>,
        /// Codex: accepted, no effect in the proxy.
        #[allow(dead_code)] // read by Codex, not by the proxy
        pub(super) default_tools_approval_mode: Option<codex::ApprovalMode>,
        /// Codex: a legacy display name; accepted, no effect.
        #[allow(dead_code)] // read by Codex, not by the proxy
        pub(super) name: Option<String>,
        #[schemars(skip)]
        pub(super) experimental_environment: codex::Refused,
        #[schemars(skip)]
        pub(super) bearer_token: codex::Refused,
        #[schemars(skip)]
        pub(super) scopes: codex::Refused,
        #[schemars(skip)]
        pub(super) oauth: codex::Refused,
        #[schemars(skip)]
        pub(super) oauth_resource: codex::Refused,
    }
}

table_with_settings! {
    whose = "this tool";
    /// One `[mcp_servers.NAME.tools.TOOL]` table: overrides for one tool.
    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[schemars(rename = "Tool")]
    pub(super) struct RawTool {
        /// Codex: accepted, no effect in the proxy.
        #[allow(dead_code)] // read by Codex, not by the proxy
        pub(super) approval_mode: Option<codex::ApprovalMode>,
    }
}

/// The longest timeout accepted, in seconds (about 31.7 years): longer ones would overflow the
/// clock arithmetic of deadlines.
pub const MAX_TIMEOUT_SECS: u64 = 1_000_000_000;

/// A timeout in seconds: a positive integer or float of at most [`MAX_TIMEOUT_SECS`], checked
/// while deserializing so the error carries the key path and position.
pub(super) struct Seconds(pub(super) Duration);

/// A server's `tool_prefix`: it becomes part of every tool name the client sees, so it may hold
/// only what a tool name may (MCP 2025-11-25, Server Features: Tools, "Tool names": ASCII
/// letters, digits, `_`, `-`, `.`; at most 128 characters in all), and at most
/// [`MAX_PREFIX_CHARS`] characters, to leave room for the tool's own name.
#[derive(Debug)]
pub(super) struct ToolPrefix(pub(super) String);

/// Longest `tool_prefix`, in characters.
pub(super) const MAX_PREFIX_CHARS: usize = 64;

impl<'de> Deserialize<'de> for ToolPrefix {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let prefix = String::deserialize(d)?;
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        // The message names the rule, never the value.
        if let Some(at) = prefix.chars().position(|c| !allowed(c)) {
            return Err(serde::de::Error::custom(format!(
                "character {} is not allowed in a tool name: use only ASCII letters, digits, `_`, `-` and `.`",
                at + 1
            )));
        }
        if prefix.chars().count() > MAX_PREFIX_CHARS {
            return Err(serde::de::Error::custom(format!(
                "longer than {MAX_PREFIX_CHARS} characters (a tool name has at most 128)"
            )));
        }
        Ok(ToolPrefix(prefix))
    }
}

/// The shortest time a seconds key (`tool_timeout_sec`, `startup_timeout_sec`) takes: one
/// nanosecond, the resolution of a timer; a smaller positive value is refused, naming it.
pub(super) const MIN_SECONDS: f64 = 1e-9;

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        const EXPECTED: &str = "a positive number of seconds, at most 1000000000";
        const TOO_SHORT: &str = "a positive number of seconds of at least 0.000000001 (1 \
                                 nanosecond, the smallest timeout), at most 1000000000";
        impl serde::de::Visitor<'_> for V {
            type Value = Seconds;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(EXPECTED)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Seconds, E> {
                if v <= 0 || v as u64 > MAX_TIMEOUT_SECS {
                    return Err(E::invalid_value(
                        serde::de::Unexpected::Signed(v),
                        &EXPECTED,
                    ));
                }
                Ok(Seconds(Duration::from_secs(v as u64)))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Seconds, E> {
                if v == 0 || v > MAX_TIMEOUT_SECS {
                    return Err(E::invalid_value(
                        serde::de::Unexpected::Unsigned(v),
                        &EXPECTED,
                    ));
                }
                Ok(Seconds(Duration::from_secs(v)))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Seconds, E> {
                let value = serde::de::Unexpected::Float(v);
                if !(v.is_finite() && v > 0.0 && v <= MAX_TIMEOUT_SECS as f64) {
                    return Err(E::invalid_value(value, &EXPECTED));
                }
                // Positive, but less than the smallest time there is (1e-10 was told it was
                // not "a positive number"): the message names the bound.
                if v < MIN_SECONDS {
                    return Err(E::invalid_value(value, &TOO_SHORT));
                }
                Duration::try_from_secs_f64(v)
                    .map(Seconds)
                    .map_err(|_| E::invalid_value(value, &EXPECTED))
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for Seconds {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Seconds".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A positive number of seconds (integer or float), at least 0.000000001 (1 nanosecond), at most 1000000000.",
            "type": "number",
            "minimum": MIN_SECONDS,
            "maximum": 1_000_000_000u64
        })
    }
}

/// The JSON Schema (draft 7, which Taplo / Even Better TOML and most editors understand) of the
/// config file, generated from the deserialization types so it always matches what
/// [`Config::parse`] accepts structurally: every table rejects unknown keys
/// (`additionalProperties: false`), and doc comments become descriptions. Checks that need the
/// whole file (a tool table for a hidden tool, `${VAR}` expansion, server names) are not in it.
/// Source: issue 7 of the project.
pub fn json_schema() -> serde_json::Value {
    let generator = schemars::generate::SchemaSettings::draft07().into_generator();
    let schema = generator.into_root_schema_for::<RawConfig>();
    let mut value = serde_json::to_value(schema).expect("a schema is plain JSON");
    strip_null(&mut value);
    value
}

/// TOML has no null (a key is left out instead), so `Option`'s `null` alternative goes:
/// `"type": [T, "null"]` becomes `"type": T`, and `anyOf: [S, {"type": "null"}]` becomes `S`.
fn strip_null(value: &mut serde_json::Value) {
    use serde_json::Value;
    if let Value::Object(map) = value {
        if let Some(Value::Array(types)) = map.get_mut("type") {
            types.retain(|t| t != "null");
            if types.len() == 1 {
                let only = types.remove(0);
                map.insert("type".into(), only);
            }
        }
        if let Some(Value::Array(any)) = map.get_mut("anyOf") {
            any.retain(|s| s.get("type").and_then(Value::as_str) != Some("null"));
            if any.len() == 1 {
                let Some(Value::Object(only)) = any.pop() else {
                    unreachable!("schemas are objects")
                };
                map.remove("anyOf");
                for (k, v) in only {
                    map.entry(k).or_insert(v);
                }
            }
        }
        map.values_mut().for_each(strip_null);
    } else if let Value::Array(items) = value {
        items.iter_mut().for_each(strip_null);
    }
}
