//! `Mcp-Param-{Name}` headers: the tool arguments a 2026-07-28 server asks to see mirrored in
//! HTTP headers, by an `x-mcp-header` annotation on a property of the tool's `inputSchema`.
//! Pure.
//!
//! Source: MCP specification 2026-07-28, "Transports: Streamable HTTP", "Custom Headers from
//! Tool Parameters": the annotation names the header `Mcp-Param-{value}`; it is valid only on
//! a property reached from the schema's root through `properties` alone, as an RFC 9110 token,
//! on a `string`, `integer` or `boolean` property, unique (case-insensitively) in the schema;
//! the value at that property path in the call's `arguments` is sent (`true`/`false`, decimal
//! integers, strings as they are; Base64 sentinel when not plain ASCII, "Value Encoding"); a
//! missing or `null` value sends no header.
//!
//! A tool whose schema carries an invalid annotation is left out of the server's tools: "Clients
//! using the Streamable HTTP transport MUST reject tool definitions where any `x-mcp-header`
//! value violates these constraints. Rejection means the client MUST exclude the invalid tool
//! from the result of `tools/list`", with a warning naming the tool and the reason
//! ([`exclude_invalid`]). Clients over stdio may ignore the annotations, and a server in the
//! 2025 era gets no `Mcp-Param-*` headers, so only a 2026-07-28 server over HTTP is filtered
//! (the caller decides).

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use serde_json::{Map, Value};

use super::modern::encode_header_value;
use crate::server_tool::ServerTool;

/// JSON Schema keywords whose value is one schema, a list of schemas, or a map of schemas
/// (JSON Schema 2020-12 applicators other than `properties`): an annotation inside them is off
/// the `properties` chain.
const ONE: [&str; 11] = [
    "items",
    "contains",
    "unevaluatedItems",
    "additionalProperties",
    "propertyNames",
    "unevaluatedProperties",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];
const LIST: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
const MAP: [&str; 4] = [
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

/// One valid annotation: the property path and the header name's suffix.
pub type Annotation = (Vec<String>, String);

/// The `x-mcp-header` annotations of `input_schema` (see the module doc); `Err` says why the
/// schema's annotations are invalid.
pub fn annotations(input_schema: &Value) -> Result<Vec<Annotation>, String> {
    let mut found = Vec::new();
    walk(input_schema, Some(Vec::new()), &mut found)?;
    let mut seen = std::collections::HashSet::new();
    for (path, token) in &found {
        if !seen.insert(token.to_ascii_lowercase()) {
            return Err(format!(
                "x-mcp-header {token:?} (property {}) is not unique",
                path.join(".")
            ));
        }
    }
    Ok(found)
}

fn walk(
    schema: &Value,
    path: Option<Vec<String>>,
    found: &mut Vec<Annotation>,
) -> Result<(), String> {
    let Value::Object(schema) = schema else {
        return Ok(());
    };
    if let Some(token) = schema.get("x-mcp-header") {
        found.push(check(schema, token, path.as_deref())?);
    }
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (name, sub) in props {
            let sub_path = path.clone().map(|mut p| {
                p.push(name.clone());
                p
            });
            walk(sub, sub_path, found)?;
        }
    }
    for (key, value) in schema {
        if ONE.contains(&key.as_str()) {
            walk(value, None, found)?;
        } else if LIST.contains(&key.as_str()) {
            for sub in value.as_array().into_iter().flatten() {
                walk(sub, None, found)?;
            }
        } else if MAP.contains(&key.as_str()) {
            for sub in value.as_object().into_iter().flat_map(Map::values) {
                walk(sub, None, found)?;
            }
        }
    }
    Ok(())
}

/// One annotation checked: on a property of the `properties` chain, a token, on a primitive.
fn check(
    schema: &Map<String, Value>,
    token: &Value,
    path: Option<&[String]>,
) -> Result<Annotation, String> {
    let path = match path {
        Some(p) if !p.is_empty() => p,
        _ => return Err("x-mcp-header outside a chain of `properties`".into()),
    };
    let at = path.join(".");
    let Some(token) = token.as_str() else {
        return Err(format!("property {at}: x-mcp-header is not a string"));
    };
    let is_tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if token.is_empty() || !token.chars().all(is_tchar) {
        return Err(format!(
            "property {at}: x-mcp-header {token:?} is not an HTTP token"
        ));
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string" | "integer" | "boolean") => Ok((path.to_vec(), token.to_owned())),
        _ => Err(format!(
            "property {at}: x-mcp-header on a property that is not a string, integer or boolean"
        )),
    }
}

/// `tools` without those whose `inputSchema` carries an invalid `x-mcp-header` annotation (see
/// the module doc), in their order; one warning per tool left out, `server 'S': tool "T"
/// dropped: <reason>`, pushed to `warnings`.
pub fn exclude_invalid(
    server: &str,
    tools: Vec<ServerTool>,
    warnings: &mut Vec<String>,
) -> Vec<ServerTool> {
    let mut kept = Vec::with_capacity(tools.len());
    for tool in tools {
        let why = match tool.input_schema() {
            Some(schema) => annotations(&schema).err(),
            None => None,
        };
        match why {
            None => kept.push(tool),
            Some(why) => {
                let name = tool.name();
                warnings.push(format!("server '{server}': tool {name:?} dropped: {why}"));
            }
        }
    }
    kept
}

/// The `x-mcp-header` annotations of a server's tools, each tool's read the first time it is
/// called and kept while the server's tool list is the same one (a new listing replaces the
/// list, it never changes in place), so that a call does not parse and walk its tool's
/// `inputSchema` again.
#[derive(Default)]
pub struct MarkCache {
    /// The tool list the annotations were read from (weak: the server's list owns it).
    tools: Weak<Vec<ServerTool>>,
    /// By tool name: its valid annotations (empty when it has none), or why they are invalid.
    by_tool: HashMap<String, Result<Arc<[Annotation]>, String>>,
}

impl MarkCache {
    /// The annotations of tool `name` in `tools` ([`annotations`] of its `inputSchema`): empty
    /// when it has none or is not in the list; `Err` says why they are invalid.
    pub fn marks(
        &mut self,
        tools: &Arc<Vec<ServerTool>>,
        name: &str,
    ) -> Result<Arc<[Annotation]>, String> {
        if !std::ptr::eq(self.tools.as_ptr(), Arc::as_ptr(tools)) {
            self.tools = Arc::downgrade(tools);
            self.by_tool.clear();
        }
        if let Some(found) = self.by_tool.get(name) {
            return found.clone();
        }
        let Some(tool) = tools.iter().find(|t| t.name() == name) else {
            return Ok(Arc::from([]));
        };
        let found = match tool.input_schema() {
            Some(schema) => annotations(&schema).map(Arc::from),
            None => Ok(Arc::from([])),
        };
        self.by_tool.insert(name.to_owned(), found.clone());
        found
    }
}

/// The `Mcp-Param-*` headers (lower-case names, encoded values) of a call with `arguments`.
pub fn param_headers(annotations: &[Annotation], arguments: &Value) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    for (path, token) in annotations {
        let value = path.iter().try_fold(arguments, |node, key| node.get(key));
        let text = match value {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
            _ => continue,
        };
        let name = format!("mcp-param-{}", token.to_ascii_lowercase());
        headers.push((name, encode_header_value(&text)));
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotated_properties_are_mirrored_as_the_spec_shows() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"},
            "opts": {"type": "object", "properties": {
                "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
                "limit": {"type": "integer", "x-mcp-header": "Limit"}}}}});
        let found = annotations(&schema).unwrap();
        assert_eq!(found.len(), 3);
        let args = json!({"region": "us-west1", "query": "SELECT 1",
            "opts": {"dry": true, "limit": null}});
        assert_eq!(
            param_headers(&found, &args),
            [
                ("mcp-param-region".to_owned(), "us-west1".to_owned()),
                ("mcp-param-dry-run".to_owned(), "true".to_owned()),
            ]
        );
        let greeting = json!({"region": "Hello, 世界"});
        assert_eq!(
            param_headers(&found, &greeting)[0].1,
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert!(annotations(&json!({"type": "object"})).unwrap().is_empty());
    }

    #[test]
    fn invalid_annotations_are_refused() {
        let bad = [
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": 5}}}),
            json!({"x-mcp-header": "Root", "type": "string"}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}}}),
            json!({"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"},
                                  "b": {"type": "string", "x-mcp-header": "x"}}}),
        ];
        for schema in bad {
            assert!(annotations(&schema).is_err(), "{schema}");
        }
    }

    #[test]
    fn tools_with_invalid_annotations_are_left_out_with_a_warning_each() {
        let tool = |name: &str, props: Value| json!({"name": name, "inputSchema": {"type": "object", "properties": props}});
        let tools = [
            tool("plain", json!({"q": {"type": "string"}})),
            tool(
                "number",
                json!({"n": {"type": "number", "x-mcp-header": "N"}}),
            ),
            tool(
                "regional",
                json!({"r": {"type": "string", "x-mcp-header": "Region"}}),
            ),
            tool(
                "spaced",
                json!({"s": {"type": "string", "x-mcp-header": "A B"}}),
            ),
            tool(
                "twice",
                json!({"a": {"type": "string", "x-mcp-header": "X"},
                                 "b": {"type": "integer", "x-mcp-header": "x"}}),
            ),
        ];
        let mut warnings = vec!["earlier".to_owned()];
        let tools = tools.iter().map(|t| ServerTool::from_value(t).unwrap());
        let kept = exclude_invalid("remote", tools.collect(), &mut warnings);
        let names: Vec<&str> = kept.iter().map(ServerTool::name).collect();
        assert_eq!(names, ["plain", "regional"]);
        assert_eq!(
            warnings,
            [
                "earlier",
                "server 'remote': tool \"number\" dropped: property n: x-mcp-header on a property that is not a string, integer or boolean",
                "server 'remote': tool \"spaced\" dropped: property s: x-mcp-header \"A B\" is not an HTTP token",
                "server 'remote': tool \"twice\" dropped: x-mcp-header \"x\" (property b) is not unique",
            ]
        );
    }

    #[test]
    fn marks_are_read_once_per_tool_list() {
        let tool = |name: &str, header: &str| {
            let props = json!({"r": {"type": "string", "x-mcp-header": header}});
            let tool =
                json!({"name": name, "inputSchema": {"type": "object", "properties": props}});
            ServerTool::from_value(&tool).unwrap()
        };
        let mut cache = MarkCache::default();
        let first = Arc::new(vec![tool("regional", "Region"), tool("bad", "A B")]);
        let marks = cache.marks(&first, "regional").unwrap();
        assert_eq!(&marks[..], [(vec!["r".to_owned()], "Region".to_owned())]);
        assert!(Arc::ptr_eq(
            &marks,
            &cache.marks(&first, "regional").unwrap()
        ));
        assert!(cache
            .marks(&first, "bad")
            .unwrap_err()
            .contains("not an HTTP token"));
        assert!(cache.marks(&first, "unlisted").unwrap().is_empty());
        // A new listing is read again.
        let second = Arc::new(vec![tool("regional", "Zone")]);
        let marks = cache.marks(&second, "regional").unwrap();
        assert_eq!(&marks[..], [(vec!["r".to_owned()], "Zone".to_owned())]);
        assert!(cache.marks(&second, "bad").unwrap().is_empty());
    }
}
