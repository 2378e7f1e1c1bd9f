//! Which of a server's tool definitions the proxy offers: each one checked on its own, so one
//! malformed tool cannot break the whole `tools/list` (a strict client, such as the Python
//! SDK's, rejects the entire answer when one tool does not parse).
//!
//! A tool is kept when (MCP specification 2025-11-25, "Server Features: Tools", "Tool" and
//! "Tool names"):
//! - it is a JSON object;
//! - `name` is a string of 1 to [`MAX_NAME_CHARS`] characters, each an ASCII letter, digit,
//!   `_`, `-` or `.`;
//! - `inputSchema` is a JSON object whose `type` is `"object"`;
//! - `title` and `description`, when present, are strings; `annotations` and `_meta`, when
//!   present, are objects;
//! - its server's earlier tools (in listing order) do not already use the name, fill
//!   [`MAX_TOOLS_PER_SERVER`], or take [`MAX_TOOL_BYTES_PER_SERVER`] with their definitions.
//!
//! Every dropped tool gives one warning naming the server, the tool (when it has a readable
//! name) and why; a dropped tool with a readable name is also noted as a [`DroppedTool`]
//! ([`admission`]), so that a call of it can be answered with why it is not offered. A kept
//! tool is a [`ServerTool`]: the server's JSON text, read only as far as these rules need.
//! Pure; no I/O.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::exposed_names::set_with_capacity;
use crate::message_cut::cut_chars;
use crate::server_tool::{one_line, Facts, ServerTool, ToolHead};

/// Longest tool name, in characters (MCP 2025-11-25 "Tool names").
pub const MAX_NAME_CHARS: usize = 128;
/// Most tools offered from one server; later ones are dropped with a warning.
pub const MAX_TOOLS_PER_SERVER: usize = 2000;
/// Most bytes of tool definitions (as JSON) offered from one server, so that the merged
/// `tools/list` answer stays far below the longest line a client accepts.
pub const MAX_TOOL_BYTES_PER_SERVER: usize = 4 << 20;

/// Why the tool read as `head` is not offered, or `None` when it is well-formed; `name` is its
/// `name` read as a string (`None`: missing or not a string).
fn problem(head: &ToolHead<'_>, name: Option<&str>) -> Option<String> {
    if head.name.text().is_none() {
        return Some("it has no `name`".into());
    }
    let Some(name) = name else {
        return Some("`name` is not a string".into());
    };
    if let Some(why) = name_problem(name) {
        return Some(why);
    }
    if !head.input_schema.is_present() {
        return Some("it has no `inputSchema`".into());
    }
    if !head.input_schema.is_object() {
        return Some("`inputSchema` is not a JSON object".into());
    }
    if head.input_schema.object_type().as_deref() != Some("object") {
        return Some("`inputSchema` is not an object schema (`\"type\": \"object\"`)".into());
    }
    for (key, member) in [("title", &head.title), ("description", &head.description)] {
        if member.text().is_some() && !member.is('"') {
            return Some(format!("`{key}` is not a string"));
        }
    }
    for (key, member) in [("annotations", &head.annotations), ("_meta", &head.meta)] {
        if member.text().is_some() && !member.is('{') {
            return Some(format!("`{key}` is not a JSON object"));
        }
    }
    None
}

/// A `tools/call` name that no tool has, as the proxy shows it (the envelope's `tool` and
/// message, the log line, the transcript): whole when it is at most [`MAX_NAME_CHARS`]
/// characters; a longer one (MCP 2025-11-25 "Tool names": names SHOULD be 1 to 128
/// characters; it named no tool, so it is nobody's name), cut to its first [`MAX_NAME_CHARS`]
/// characters followed by the one truncation marker, `… [N characters cut]`
/// ([`crate::message_cut`]), so one request cannot put a name of any length into the model's
/// context.
pub fn shown_unknown_name(name: &str) -> Cow<'_, str> {
    // A name of at most 128 bytes has at most 128 characters: nothing to cut.
    if name.len() <= MAX_NAME_CHARS {
        return Cow::Borrowed(name);
    }
    Cow::Owned(cut_chars(name, MAX_NAME_CHARS))
}

/// Why `name` breaks the tool-name rules, or `None`.
pub fn name_problem(name: &str) -> Option<String> {
    let chars = name.chars().count();
    if chars == 0 {
        return Some("`name` is empty".into());
    }
    if chars > MAX_NAME_CHARS {
        return Some(format!(
            "`name` is {chars} characters long (at most {MAX_NAME_CHARS})"
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Some(format!(
            "`name` contains {bad:?} (only ASCII letters, digits, `_`, `-` and `.` are allowed)"
        ));
    }
    None
}

/// The `name` string of a tool text that [`ToolHead::parse`] refused, read leniently for its
/// warning: a repeated member is taken as its last occurrence (as `serde_json::Value` reads
/// it). `None` when the text is not a JSON object or has no string `name`.
fn lenient_name(text: &str) -> Option<String> {
    match serde_json::from_str::<serde_json::Value>(text).ok()? {
        serde_json::Value::Object(mut members) => match members.remove("name")? {
            serde_json::Value::String(name) => Some(name),
            _ => None,
        },
        _ => None,
    }
}

/// A tool a server listed that is not offered because its definition breaks a rule of the
/// module doc (a tool listed twice is not one: its first definition is offered). Serialized
/// as `{"server": "<config name>", "tool": "<its own name>", "reason": "<why>"}`, e.g.
/// `{"server":"h","tool":"bad","reason":"`inputSchema` is not a JSON object"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedTool {
    /// The server's config name.
    pub server: String,
    /// The tool's own `name` as the server listed it (a string; uncut).
    pub tool: String,
    /// Why it is not offered, in plain words (the reason its warning gives).
    pub reason: String,
}

/// What [`admission`] made of a server's listing.
#[derive(Debug, Default)]
pub struct Admission {
    /// The tools offered, in listing order.
    pub tools: Vec<ServerTool>,
    /// One line for each tool dropped (or group of tools, past the limits), naming the
    /// server, the tool and why.
    pub warnings: Vec<String>,
    /// Each dropped tool that has a string `name`, in listing order.
    pub dropped: Vec<DroppedTool>,
}

/// Splits `tools` (the JSON text of each tool, as server `server` listed them, all pages) into
/// the ones offered, in order, and a warning for each one dropped ([`admission`] without the
/// dropped tools' names).
pub fn admit<T: Into<Box<str>>>(
    server: &str,
    tools: impl IntoIterator<Item = T>,
) -> (Vec<ServerTool>, Vec<String>) {
    let Admission {
        tools, warnings, ..
    } = admission(server, tools);
    (tools, warnings)
}

/// Splits `tools` (the JSON text of each tool, as server `server` listed them, all pages) into
/// the ones offered, in order, a warning for each one dropped, and the dropped tools that have
/// a name.
pub fn admission<T: Into<Box<str>>>(server: &str, tools: impl IntoIterator<Item = T>) -> Admission {
    let texts: Vec<Box<str>> = tools.into_iter().map(|t| one_line(t.into())).collect();
    let mut out = Dropping {
        server,
        warnings: Vec::new(),
        dropped: Vec::new(),
    };
    let chosen = choose(&texts, &mut out);
    // Each kept text moves into its tool (no copy).
    let mut chosen = chosen.into_iter().peekable();
    let mut kept = Vec::with_capacity(chosen.len());
    for (index, text) in texts.into_iter().enumerate() {
        if chosen.peek().is_some_and(|(at, _)| *at == index) {
            let (_, facts) = chosen.next().expect("peeked");
            kept.push(facts.with_text(text));
        }
    }
    Admission {
        tools: kept,
        warnings: out.warnings,
        dropped: out.dropped,
    }
}

/// Where [`choose`] notes what it drops, for server `server`.
struct Dropping<'a> {
    server: &'a str,
    warnings: Vec<String>,
    dropped: Vec<DroppedTool>,
}

impl Dropping<'_> {
    /// Notes the tool named `name` (`None`: it has no string name) dropped for `why`.
    fn drop(&mut self, name: Option<&str>, why: String) {
        let label = match name {
            Some(n) => format!("tool {:?}", cut_chars(n, 80)),
            None => "a tool".to_owned(),
        };
        let server = self.server;
        self.warnings
            .push(format!("server '{server}': {label} dropped: {why}"));
        if let Some(tool) = name {
            self.dropped.push(DroppedTool {
                server: server.to_owned(),
                tool: tool.to_owned(),
                reason: why,
            });
        }
    }
}

/// The tools of `texts` that are offered, by the rules in the module doc: the index of each,
/// ascending, and its facts. Notes each tool dropped in `out`. The names seen are borrowed
/// from the texts (a copy of each was a tenth of a 10,000-tool listing's allocations).
fn choose(texts: &[Box<str>], out: &mut Dropping<'_>) -> Vec<(usize, Facts)> {
    let mut chosen = Vec::with_capacity(texts.len().min(MAX_TOOLS_PER_SERVER));
    let mut names = set_with_capacity(chosen.capacity());
    let mut bytes = 0usize;
    let mut over_limit = 0usize;
    let limits = format!(
        "more than {MAX_TOOLS_PER_SERVER} tools or {} MiB of tool definitions",
        MAX_TOOL_BYTES_PER_SERVER >> 20
    );
    let over_limit_reason = format!("its server offers {limits}");
    for (index, text) in texts.iter().enumerate() {
        let head = match ToolHead::parse(text) {
            Ok(head) => head,
            Err(why) => {
                out.drop(lenient_name(text).as_deref(), why);
                continue;
            }
        };
        // Read once: the checks, the duplicate check and the tool's facts use it.
        let name = head.name.string();
        if let Some(why) = problem(&head, name.as_deref()) {
            out.drop(name.as_deref(), why);
            continue;
        }
        let name = name.expect("checked above");
        if names.contains(&name) {
            let label = format!("tool {:?}", cut_chars(&name, 80));
            let server = out.server;
            out.warnings.push(format!(
                "server '{server}': {label} dropped: listed twice; the first is used"
            ));
            continue;
        }
        if chosen.len() >= MAX_TOOLS_PER_SERVER || bytes + text.len() > MAX_TOOL_BYTES_PER_SERVER {
            over_limit += 1;
            out.dropped.push(DroppedTool {
                server: out.server.to_owned(),
                tool: name.into_owned(),
                reason: over_limit_reason.clone(),
            });
            continue;
        }
        bytes += text.len();
        let facts = head.named_facts(text, &name);
        names.insert(name);
        chosen.push((index, facts));
    }
    if over_limit > 0 {
        let server = out.server;
        out.warnings.push(format!(
            "server '{server}': {over_limit} tool(s) dropped: {limits}"
        ));
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn ok(name: &str) -> Value {
        json!({"name": name, "inputSchema": {"type": "object"}})
    }

    /// `admit` over the tools' JSON texts; the kept tools as values.
    fn admit(server: &str, tools: Vec<Value>) -> (Vec<Value>, Vec<String>) {
        let (kept, warnings) = super::admit(server, tools.iter().map(Value::to_string));
        (kept.iter().map(ServerTool::to_value).collect(), warnings)
    }

    #[test]
    fn well_formed_tools_pass_unchanged() {
        let tools = vec![
            ok("git_log"),
            json!({"name": "a.b-c_D9", "title": "T", "description": "d", "inputSchema": {"type": "object", "properties": {}}, "annotations": {"readOnlyHint": true}, "x-extra": 1}),
        ];
        let (kept, warnings) = admit("s", tools.clone());
        assert_eq!(kept, tools);
        assert!(warnings.is_empty());
    }

    #[test]
    fn each_malformed_tool_is_dropped_with_a_reason() {
        let cases = [
            (json!("not a tool"), "not a JSON object"),
            (json!({"inputSchema": {"type": "object"}}), "no `name`"),
            (
                json!({"name": 5, "inputSchema": {"type": "object"}}),
                "`name` is not a string",
            ),
            (
                json!({"name": "", "inputSchema": {"type": "object"}}),
                "empty",
            ),
            (ok(&"x".repeat(129)), "129 characters"),
            (ok("has space"), "' '"),
            (ok("a/b"), "'/'"),
            (ok("ünï"), "'ü'"),
            (json!({"name": "t"}), "no `inputSchema`"),
            (
                json!({"name": "t", "inputSchema": "not-an-object"}),
                "not a JSON object",
            ),
            (
                json!({"name": "t", "inputSchema": {"type": "string"}}),
                "not an object schema",
            ),
            (
                json!({"name": "t", "inputSchema": {"type": "object"}, "description": 7}),
                "`description`",
            ),
            (
                json!({"name": "t", "inputSchema": {"type": "object"}, "annotations": []}),
                "`annotations`",
            ),
        ];
        for (tool, why) in cases {
            let (kept, warnings) = admit("srv", vec![tool.clone(), ok("fine")]);
            assert_eq!(kept, vec![ok("fine")], "{tool}");
            assert_eq!(warnings.len(), 1, "{tool}");
            assert!(warnings[0].starts_with("server 'srv': "), "{}", warnings[0]);
            assert!(warnings[0].contains(why), "{tool}: {}", warnings[0]);
        }
        assert!(name_problem(&"x".repeat(128)).is_none());
    }

    #[test]
    fn each_dropped_tool_with_a_name_is_noted_with_its_server_and_reason() {
        let texts = [
            r#"{"name":"bad","inputSchema":"x"}"#.to_owned(),
            r#"{"name":"twice","name":"twice","inputSchema":{"type":"object"}}"#.to_owned(),
            r#"{"inputSchema":{"type":"object"}}"#.to_owned(),
            ok("fine").to_string(),
            ok("fine").to_string(),
        ];
        let got = admission("srv", texts);
        assert_eq!(got.tools.len(), 1);
        assert_eq!(got.warnings.len(), 4, "{:?}", got.warnings);
        let noted = |tool: &str, reason: &str| DroppedTool {
            server: "srv".into(),
            tool: tool.into(),
            reason: reason.into(),
        };
        assert_eq!(
            got.dropped,
            [
                noted("bad", "`inputSchema` is not a JSON object"),
                noted(
                    "twice",
                    "the tool is not a valid JSON object: duplicate field `name` at line 1 column 22"
                ),
            ],
            "a nameless tool cannot be called, and a tool listed twice is offered"
        );
        let many: Vec<String> = (0..MAX_TOOLS_PER_SERVER + 1)
            .map(|i| ok(&format!("t{i}")).to_string())
            .collect();
        let got = admission("s", many);
        assert_eq!(got.dropped.len(), 1);
        assert_eq!(got.dropped[0].tool, format!("t{MAX_TOOLS_PER_SERVER}"));
        assert!(got.dropped[0].reason.contains("more than 2000 tools"));
    }

    #[test]
    fn an_unknown_name_longer_than_any_tools_is_shown_cut() {
        let long = "x".repeat(100_000);
        let shown = shown_unknown_name(&long);
        assert_eq!(
            shown,
            format!("{}… [99872 characters cut]", "x".repeat(128))
        );
        for whole in ["fetch", &"é".repeat(128), &"y".repeat(128)] {
            assert_eq!(shown_unknown_name(whole), whole);
        }
        assert_eq!(
            shown_unknown_name(&"é".repeat(130)),
            format!("{}… [2 characters cut]", "é".repeat(128))
        );
    }

    #[test]
    fn duplicates_and_tools_past_the_limit_are_dropped() {
        let (kept, warnings) = admit("s", vec![ok("a"), ok("a")]);
        assert_eq!(kept.len(), 1);
        assert!(warnings[0].contains("listed twice"));
        let many: Vec<Value> = (0..MAX_TOOLS_PER_SERVER + 5)
            .map(|i| ok(&format!("t{i}")))
            .collect();
        let (kept, warnings) = admit("s", many);
        assert_eq!(kept.len(), MAX_TOOLS_PER_SERVER);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("5 tool(s) dropped"), "{}", warnings[0]);
    }

    #[test]
    fn kept_tools_are_the_servers_text_and_bad_texts_are_dropped_with_a_warning() {
        let fine =
            r#"{"name":"fine", "inputSchema":{"type":"object"},"x-vendor":{"a":[1.50,"\u00e9"]}}"#;
        let texts = [
            r#"{"name":"twice","name":"twice","inputSchema":{"type":"object"}}"#,
            r#"{"name":"nulltitle","title":null,"inputSchema":{"type":"object"}}"#,
            r#"{"name":"typeless","inputSchema":{"properties":{}}}"#,
            "42",
            fine,
        ];
        let (kept, warnings) = super::admit("srv", texts);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].text(), fine, "byte for byte");
        assert_eq!(kept[0].name(), "fine");
        assert_eq!(warnings.len(), 4, "{warnings:?}");
        assert!(
            warnings[0].contains("tool \"twice\" dropped: the tool is not a valid JSON object: duplicate field `name`"),
            "{}",
            warnings[0]
        );
        assert!(
            warnings[1].contains("tool \"nulltitle\" dropped: `title`"),
            "{}",
            warnings[1]
        );
        assert!(
            warnings[2].contains("not an object schema"),
            "{}",
            warnings[2]
        );
        assert!(warnings[3].contains("a tool dropped: the tool is not a JSON object"));
    }

    #[test]
    fn the_input_schema_type_is_read_from_the_schema_object_alone() {
        let kept = [
            r#"{"name":"a","inputSchema":{"properties":{"q":{"type":"string"}},"type":"object"}}"#,
            r#"{"name":"b","inputSchema":{"\u0074ype":"\u006fbject","x":[{"type":1}]}}"#,
            r#"{"name":"c","inputSchema":{"type":"object","properties":{"type":{"type":"array"}}}}"#,
        ];
        let (tools, warnings) = super::admit("srv", kept);
        assert_eq!(tools.len(), 3, "{warnings:?}");
        assert_eq!(tools[1].text(), kept[1], "byte for byte");
        let dropped = [
            (
                r#"{"name":"d","inputSchema":{"type":"object","type":"object"}}"#,
                "not an object schema",
            ),
            (
                r#"{"name":"e","inputSchema":{"type":["object"]}}"#,
                "not an object schema",
            ),
            (
                r#"{"name":"f","inputSchema":{"properties":{"type":"object"}}}"#,
                "not an object schema",
            ),
            (
                r#"{"name":"g","inputSchema":null}"#,
                "`inputSchema` is not a JSON object",
            ),
            (
                r#"{"name":"h","inputSchema":[{"type":"object"}]}"#,
                "`inputSchema` is not a JSON object",
            ),
            (
                r#"{"name":"i","inputSchema":1.5}"#,
                "`inputSchema` is not a JSON object",
            ),
            (
                r#"{"name":"j","inputSchema":{"type":"object"},"inputSchema":{"type":"object"}}"#,
                "duplicate field `inputSchema`",
            ),
            (
                r#"{"name":"k","inputSchema":{"type":"object""#,
                "not a valid JSON object",
            ),
        ];
        for (text, why) in dropped {
            let (tools, warnings) = super::admit("srv", [text]);
            assert!(tools.is_empty(), "{text}");
            assert!(warnings[0].contains(why), "{text}: {warnings:?}");
        }
    }
}
