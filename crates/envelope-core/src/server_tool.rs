//! One tool as its server listed it, kept as the server's own JSON text ([`ServerTool`]): a
//! proxy with thousands of tools keeps about the text's size per tool instead of a value tree
//! ten times larger, forwards every member it does not know byte for byte, and writes the
//! client's tool by splicing the exposed name and the envelope's `outputSchema` into that text.
//!
//! Only the members the proxy reads are parsed (MCP specification 2025-11-25, "Server
//! Features: Tools", "Tool"): `name`, `inputSchema` (its `type`), `outputSchema` (where it is),
//! `title`, `description`, `annotations`, `_meta` (their JSON types) and
//! `execution.taskSupport`. A tool whose text repeats one of these members is refused (which
//! one counts differs between JSON parsers). Pure; no I/O.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// One tool as its server listed it (an MCP `Tool` object with a string `name`): the server's
/// JSON text, unchanged but for line breaks between tokens (each becomes a space, so the text
/// fits on one line of the stdio transport), and the facts the proxy reads from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTool {
    text: Box<str>,
    /// Where the `name` member's value (a JSON string, quotes included) is in `text`.
    name_at: Range<u32>,
    /// The name, read once when the tool is listed: a catalog shares this string (its
    /// routes, [`crate::exposed_names::ExposedNames`]) instead of copying it on the
    /// start-up's path.
    name: Arc<str>,
    /// Where the `outputSchema` member's value is in `text`, if the tool has one.
    output_schema_at: Option<Range<u32>>,
    /// `execution.taskSupport` is `"required"` (MCP 2025-11-25).
    requires_task: bool,
}

impl ServerTool {
    /// Reads a tool from its JSON text. `Err` (why, in words) when the text is not one JSON
    /// object, repeats a member the proxy reads, or has no string `name`.
    pub fn parse(text: impl Into<Box<str>>) -> Result<ServerTool, String> {
        let text = one_line(text.into());
        let head = ToolHead::parse(&text)?;
        let facts = head.facts(&text)?;
        Ok(facts.with_text(text))
    }

    /// [`ServerTool::parse`] of a value's JSON text.
    pub fn from_value(tool: &Value) -> Result<ServerTool, String> {
        ServerTool::parse(tool.to_string())
    }

    /// The tool's JSON text (one object on one line).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The tool's own name on its server.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// [`ServerTool::name`] as the tool's shared string.
    pub fn shared_name(&self) -> &Arc<str> {
        &self.name
    }

    /// Whether the tool must be called as a task (`execution.taskSupport` is `"required"`,
    /// MCP 2025-11-25 "Tools"): the proxy does not pass tasks through.
    pub fn requires_task(&self) -> bool {
        self.requires_task
    }

    /// The tool as a JSON value (parses the text).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.text).expect("a server tool's text is valid JSON")
    }

    /// The tool's `inputSchema`, parsed; `None` when it has none.
    pub fn input_schema(&self) -> Option<Value> {
        #[derive(Deserialize)]
        struct Schema<'a> {
            #[serde(borrow, default, rename = "inputSchema")]
            input_schema: Member<'a>,
        }
        let tool: Schema<'_> = serde_json::from_str(&self.text).ok()?;
        serde_json::from_str(tool.input_schema.text()?).ok()
    }

    /// Appends the tool as a client sees it: the server's text with the `name` member's value
    /// replaced by `exposed` (as a JSON string) and the `outputSchema` member's value by
    /// `output_schema` (JSON text), which is added as the last member when the tool had none.
    /// Every other member, and the order of all, is the server's.
    pub fn write_exposed(&self, out: &mut Vec<u8>, exposed: &str, output_schema: &str) {
        let text = self.text.as_bytes();
        // `None`: the exposed name, written as a JSON string straight into `out`.
        let mut cuts = [
            Some((span(&self.name_at), None)),
            self.output_schema_at
                .as_ref()
                .map(|at| (span(at), Some(output_schema.as_bytes()))),
        ];
        cuts.sort_by_key(|cut| cut.as_ref().map(|(at, _)| at.start));
        let mut from = 0;
        for (at, with) in cuts.into_iter().flatten() {
            out.extend_from_slice(&text[from..at.start]);
            match with {
                Some(with) => out.extend_from_slice(with),
                None => write_json_string(out, exposed),
            }
            from = at.end;
        }
        if self.output_schema_at.is_some() {
            out.extend_from_slice(&text[from..]);
            return;
        }
        // The text ends with the object's `}` ([`one_line`] trimmed it).
        let close = text.len() - 1;
        out.extend_from_slice(&text[from..close]);
        out.extend_from_slice(b",\"outputSchema\":");
        out.extend_from_slice(output_schema.as_bytes());
        out.push(b'}');
    }
}

/// Appends `text` as a JSON string: between quotes as it is when nothing in it needs an escape
/// (RFC 8259 section 7: `"`, `\\` and the control characters U+0000 to U+001F), which is what
/// serde_json writes then; else as serde_json writes it. A tool name rarely has any.
fn write_json_string(out: &mut Vec<u8>, text: &str) {
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        serde_json::to_writer(&mut *out, text).expect("a string always serializes");
    }
}

fn span(at: &Range<u32>) -> Range<usize> {
    at.start as usize..at.end as usize
}

/// `text` without space around it, each line break in it (which JSON allows only between
/// tokens) made a space. Line breaks are looked for bytewise ([`memchr::memchr2`]): a search
/// by `char`s cost about ten instructions a byte, a tenth of the proxy's start-up with 10,000
/// tools.
pub(crate) fn one_line(text: Box<str>) -> Box<str> {
    let trimmed = text.trim_matches(|c: char| c.is_ascii_whitespace());
    if memchr::memchr2(b'\n', b'\r', trimmed.as_bytes()).is_some() {
        trimmed.replace(['\n', '\r'], " ").into_boxed_str()
    } else if trimmed.len() < text.len() {
        trimmed.into()
    } else {
        text
    }
}

/// A member's value as raw JSON text, `null` included (an `Option` field would take `null`
/// for a missing member); the default is a missing member.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Member<'a>(pub(crate) Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Member<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d).map(|raw| Member(Some(raw)))
    }
}

impl<'a> Member<'a> {
    /// The value's text, if the member is there.
    pub(crate) fn text(&self) -> Option<&'a str> {
        self.0.map(RawValue::get)
    }

    /// Whether the member is there and its value is of the JSON type that starts with `first`
    /// (`{` object, `"` string).
    pub(crate) fn is(&self, first: char) -> bool {
        self.text().is_some_and(|t| t.starts_with(first))
    }

    /// The value as a string: `None` when it is missing or not a JSON string.
    pub(crate) fn string(&self) -> Option<Cow<'a, str>> {
        let text = self.text().filter(|t| t.starts_with('"'))?;
        // The text is one JSON string the parser has checked (RFC 8259 section 7): without a
        // backslash, what stands between its quotes is the string itself.
        if !text.contains('\\') {
            return Some(Cow::Borrowed(&text[1..text.len() - 1]));
        }
        match serde_json::from_str::<&str>(text) {
            Ok(plain) => Some(Cow::Borrowed(plain)),
            Err(_) => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
        }
    }
}

/// A tool's `inputSchema` as far as [`crate::tool_validation`] reads it (MCP 2025-11-25
/// "Tool": an object schema, `"type": "object"`), taken in the same pass over the tool's text
/// as its other members: whether the member is there, whether it is an object, and that
/// object's `type` when it is a string. The default is a missing member. Reading the schema a
/// second time only for its `type` was about a sixth of the proxy's start-up instructions
/// with 10,000 tools.
#[derive(Debug, Default)]
pub(crate) struct SchemaHead<'a> {
    /// `None`: no `inputSchema` member. `Some(None)`: a value that is not a JSON object.
    /// `Some(Some(ty))`: an object, `ty` its `type` member ([`ObjectType`]).
    seen: Option<Option<ObjectType<'a>>>,
}

/// The `type` member of a schema object: absent, given more than once, or given once (its raw
/// value, a string or not).
#[derive(Debug, Default)]
enum ObjectType<'a> {
    #[default]
    Missing,
    Repeated,
    Once(Member<'a>),
}

impl<'a> SchemaHead<'a> {
    /// Whether the tool has an `inputSchema` member (`null` included).
    pub(crate) fn is_present(&self) -> bool {
        self.seen.is_some()
    }

    /// Whether `inputSchema` is there and a JSON object.
    pub(crate) fn is_object(&self) -> bool {
        matches!(self.seen, Some(Some(_)))
    }

    /// The `type` of the `inputSchema` object, when it is a string (`None` when the schema is
    /// missing, not an object, has no `type` or repeats it).
    pub(crate) fn object_type(&self) -> Option<Cow<'a, str>> {
        match &self.seen {
            Some(Some(ObjectType::Once(ty))) => ty.string(),
            _ => None,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for SchemaHead<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SchemaVisitor)
            .map(|ty| SchemaHead { seen: Some(ty) })
    }
}

/// Reads any JSON value: an object's `type` member is kept ([`ObjectType`]), everything else
/// is skipped unread (`None`: the value is not an object).
struct SchemaVisitor;

/// A schema object's member names: `type`, or any other (matched without allocating), or
/// the token of a number that is no map ([`crate::numbers::NUMBER_TOKEN`]).
#[derive(Deserialize)]
#[serde(field_identifier)]
enum SchemaKey {
    #[serde(rename = "type")]
    Type,
    #[serde(rename = "$serde_json::private::Number")]
    Number,
    #[serde(other)]
    Other,
}

impl<'de> serde::de::Visitor<'de> for SchemaVisitor {
    type Value = Option<ObjectType<'de>>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut ty = ObjectType::Missing;
        while let Some(key) = map.next_key::<SchemaKey>()? {
            match key {
                SchemaKey::Type => {
                    let value: Member<'de> = map.next_value()?;
                    ty = match ty {
                        ObjectType::Missing => ObjectType::Once(value),
                        _ => ObjectType::Repeated,
                    };
                }
                SchemaKey::Other => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
                // A number such as `1.5`: no object.
                SchemaKey::Number => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    return Ok(None);
                }
            }
        }
        Ok(Some(ty))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// The members of a tool the proxy reads, borrowed from its text; every other member is
/// skipped unread.
#[derive(Deserialize)]
pub(crate) struct ToolHead<'a> {
    #[serde(borrow, default)]
    pub(crate) name: Member<'a>,
    #[serde(borrow, default, rename = "inputSchema")]
    pub(crate) input_schema: SchemaHead<'a>,
    #[serde(borrow, default, rename = "outputSchema")]
    output_schema: Member<'a>,
    #[serde(borrow, default)]
    pub(crate) title: Member<'a>,
    #[serde(borrow, default)]
    pub(crate) description: Member<'a>,
    #[serde(borrow, default)]
    pub(crate) annotations: Member<'a>,
    #[serde(borrow, default, rename = "_meta")]
    pub(crate) meta: Member<'a>,
    #[serde(borrow, default)]
    execution: Member<'a>,
}

#[derive(Deserialize)]
struct TaskSupport<'a> {
    #[serde(borrow, default, rename = "taskSupport")]
    task_support: Member<'a>,
}

impl<'a> ToolHead<'a> {
    /// Reads the members of the tool in `text`; `Err` (why) when it is not one JSON object or
    /// repeats one of these members.
    pub(crate) fn parse(text: &'a str) -> Result<ToolHead<'a>, String> {
        if !text.starts_with('{') {
            return Err("the tool is not a JSON object".into());
        }
        serde_json::from_str(text).map_err(|e| format!("the tool is not a valid JSON object: {e}"))
    }

    /// Whether `execution.taskSupport` is `"required"`.
    fn requires_task(&self) -> bool {
        let Some(execution) = self.execution.text().filter(|t| t.starts_with('{')) else {
            return false;
        };
        serde_json::from_str::<TaskSupport<'a>>(execution)
            .ok()
            .and_then(|e| e.task_support.string())
            .is_some_and(|s| s == "required")
    }

    /// Where the facts of a [`ServerTool`] are in `text` (the text this head was read from).
    pub(crate) fn facts(&self, text: &str) -> Result<Facts, String> {
        if self.name.0.is_none() {
            return Err("it has no `name`".into());
        }
        let Some(name) = self.name.string() else {
            return Err("`name` is not a string".into());
        };
        Ok(self.named_facts(text, &name))
    }

    /// [`ToolHead::facts`] of a tool whose `name` was read already (as `name`, a string).
    pub(crate) fn named_facts(&self, text: &str, name: &str) -> Facts {
        let at = |raw: &RawValue| {
            let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
            start as u32..(start + raw.get().len()) as u32
        };
        Facts {
            name_at: at(self.name.0.expect("a named tool has a `name`")),
            name: name.into(),
            output_schema_at: self.output_schema.0.map(at),
            requires_task: self.requires_task(),
        }
    }
}

/// What a [`ServerTool`] keeps besides its text; positions are byte offsets into the text.
pub(crate) struct Facts {
    name_at: Range<u32>,
    name: Arc<str>,
    output_schema_at: Option<Range<u32>>,
    requires_task: bool,
}

impl Facts {
    /// The tool of `text`, the text these facts were read from.
    pub(crate) fn with_text(self, text: Box<str>) -> ServerTool {
        ServerTool {
            text,
            name_at: self.name_at,
            name: self.name,
            output_schema_at: self.output_schema_at,
            requires_task: self.requires_task,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SCHEMA: &str = r#"{"type":"object","x":1}"#;

    fn exposed(tool: &ServerTool, name: &str) -> String {
        let mut out = Vec::new();
        tool.write_exposed(&mut out, name, SCHEMA);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn unknown_members_and_spacing_are_kept_byte_for_byte() {
        let text = r#"{ "x-vendor" : {"deep": [1, 2.50, "é\n"]}, "name":"echo",  "inputSchema":{"type":"object"} ,"zz":null }"#;
        let tool = ServerTool::parse(text).unwrap();
        assert_eq!(tool.name(), "echo");
        assert_eq!(tool.text(), text);
        let out = exposed(&tool, "p_echo");
        assert_eq!(
            out,
            r#"{ "x-vendor" : {"deep": [1, 2.50, "é\n"]}, "name":"p_echo",  "inputSchema":{"type":"object"} ,"zz":null ,"outputSchema":{"type":"object","x":1}}"#
        );
        let mut expected: Value = serde_json::from_str(text).unwrap();
        expected["name"] = json!("p_echo");
        expected["outputSchema"] = serde_json::from_str(SCHEMA).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), expected);
    }

    #[test]
    fn an_output_schema_is_replaced_where_it_stands_before_or_after_the_name() {
        for text in [
            r#"{"outputSchema":{"type":"object","properties":{}},"name":"a","d":1}"#,
            r#"{"name":"a","outputSchema":{"type":"object"},"d":1}"#,
        ] {
            let tool = ServerTool::parse(text).unwrap();
            let out: Value = serde_json::from_str(&exposed(&tool, "s__a\"q")).unwrap();
            let mut expected: Value = serde_json::from_str(text).unwrap();
            expected["name"] = json!("s__a\"q");
            expected["outputSchema"] = serde_json::from_str(SCHEMA).unwrap();
            assert_eq!(out, expected);
            let keys: Vec<_> = out.as_object().unwrap().keys().collect();
            let want: Vec<_> = expected.as_object().unwrap().keys().collect();
            assert_eq!(keys, want, "member order kept");
        }
    }

    #[test]
    fn an_exposed_name_is_written_as_serde_json_writes_it() {
        for name in [
            "echo",
            "a.b-c_D9",
            "",
            "é ü",
            "q\"uote",
            "back\\slash",
            "tab\tnl\n",
            "\u{1}",
            "\u{1f}",
            " ",
            "\u{7f}",
            "\u{2028}",
            "😀",
        ] {
            let mut out = Vec::new();
            write_json_string(&mut out, name);
            assert_eq!(out, serde_json::to_vec(name).unwrap(), "{name:?}");
        }
    }

    #[test]
    fn line_breaks_become_spaces_and_escaped_names_are_read() {
        let tool =
            ServerTool::parse("{\r\n  \"name\": \"\\u0061b\",\n  \"k\": \"l\\nm\"\n}").unwrap();
        assert_eq!(tool.name(), "ab");
        assert!(!tool.text().contains(['\n', '\r']));
        let out = exposed(&tool, "ab");
        assert!(!out.contains('\n'));
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["k"], "l\nm");
        assert_eq!(value["name"], "ab");
    }

    #[test]
    fn task_support_and_input_schema_are_read() {
        let required = json!({"name": "t", "execution": {"taskSupport": "required"}, "inputSchema": {"type": "object", "properties": {"q": {}}}});
        let tool = ServerTool::from_value(&required).unwrap();
        assert!(tool.requires_task());
        assert_eq!(tool.input_schema().unwrap(), required["inputSchema"]);
        for execution in [
            json!({"taskSupport": "optional"}),
            json!("required"),
            json!(null),
        ] {
            let tool =
                ServerTool::from_value(&json!({"name": "t", "execution": execution})).unwrap();
            assert!(!tool.requires_task(), "{execution}");
            assert_eq!(tool.input_schema(), None);
        }
    }

    #[test]
    fn texts_that_are_not_tools_are_refused_with_a_reason() {
        for (text, why) in [
            ("\"a tool\"", "not a JSON object"),
            ("[1]", "not a JSON object"),
            (r#"{"name":"a","name":"b"}"#, "duplicate field `name`"),
            (r#"{"description":"x"}"#, "no `name`"),
            (r#"{"name":7}"#, "`name` is not a string"),
            (r#"{"name":null}"#, "`name` is not a string"),
            (r#"{"name":"a""#, "not a valid JSON object"),
        ] {
            let err = ServerTool::parse(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    #[test]
    fn line_breaks_become_spaces_and_the_ends_are_trimmed() {
        let cases = [
            ("{\"a\":1}", "{\"a\":1}"),
            (" \r\n{\"a\":1}\n", "{\"a\":1}"),
            ("{\"a\":\n1,\r\n\"b\":\"é\"}", "{\"a\": 1,  \"b\":\"é\"}"),
            ("{\"s\":\"\\n\"}\t", "{\"s\":\"\\n\"}"),
        ];
        for (text, expected) in cases {
            assert_eq!(&*one_line(text.into()), expected, "{text:?}");
        }
    }
}
