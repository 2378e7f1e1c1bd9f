//! The `tools/list` answer (MCP 2025-06-18 "Tools: Listing Tools"): the catalog's tools, then
//! the page tool when paging is on. The catalog keeps its tools as one JSON array, made once
//! per catalog ([`Catalog::tools_json`]); each request copies that text into its JSON-RPC
//! response, nothing is parsed or serialized again. A new catalog (a server's tools changed, a
//! restart, a reload) is a new `Arc`, so an answer is never stale.

use serde_json::{Map, Value};

use super::Core;
use crate::catalog::Catalog;
use crate::page_tool::Pager;

impl Core {
    /// The whole JSON-RPC response to `tools/list` request `id`: the catalog's tools (a
    /// server's tool named like the page tool left out), then the page tool when `pager` is
    /// given; stamped for an MCP 2026-07-28 request when `modern` ([`response_json`]).
    pub(super) fn tools_list_response(
        &self,
        id: &Value,
        pager: Option<&Pager>,
        modern: bool,
    ) -> Vec<u8> {
        let catalog = self.catalog();
        let Some(pager) = pager else {
            return response_json(id, catalog.tools_json(), None, modern);
        };
        let page_tool = pager.tool_definition().to_string();
        if catalog.route(pager.tool_name()).is_none() {
            let tools = catalog.tools_json();
            return response_json(id, tools, Some(&page_tool), modern);
        }
        // A server's tool has the page tool's name (rare): the array without it.
        let tools = tools_array_without(&catalog, pager.tool_name());
        response_json(id, &tools, Some(&page_tool), modern)
    }
}

/// `[tool,…]` of `catalog` without the tool exposed as `name`.
fn tools_array_without(catalog: &Catalog, name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(catalog.tools_json().len());
    out.push(b'[');
    let listed = catalog.tool_texts().zip(catalog.names());
    for (tool, _) in listed.filter(|(_, exposed)| &***exposed != name) {
        if out.len() > 1 {
            out.push(b',');
        }
        out.extend_from_slice(tool);
    }
    out.push(b']');
    out
}

/// The whole JSON-RPC response to `tools/list` request `id` around the `tools` array (JSON
/// text) and one more tool (`extra`, JSON text of an object) after its last one:
/// `{"jsonrpc":"2.0","id":…,"result":{"tools":[…]}}`, the result stamped for an MCP
/// 2026-07-28 request when `modern` ([`crate::era::stamp_result`]). The array is copied once;
/// nothing is parsed.
pub(super) fn response_json(
    id: &Value,
    tools: &[u8],
    extra: Option<&str>,
    modern: bool,
) -> Vec<u8> {
    let id = serde_json::to_vec(id).expect("a JSON value always serializes");
    // The rest of the result, after `tools`: empty, or the modern stamps.
    let mut rest = Map::new();
    if modern {
        crate::era::stamp_result("tools/list", &mut rest);
    }
    let rest = serde_json::to_vec(&rest).expect("a JSON value always serializes");
    let extra = extra.unwrap_or_default();
    let mut out = Vec::with_capacity(tools.len() + extra.len() + id.len() + rest.len() + 48);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(&id);
    out.extend_from_slice(b",\"result\":{\"tools\":");
    // `tools` is `[]` or `[t,…]`: `extra` goes before its `]`.
    out.extend_from_slice(&tools[..tools.len() - 1]);
    if !extra.is_empty() {
        if tools.len() > 2 {
            out.push(b',');
        }
        out.extend_from_slice(extra.as_bytes());
    }
    out.push(b']');
    // `rest` is `{}` or `{"k":v,…}`: its members follow the tools.
    if rest.len() > 2 {
        out.push(b',');
        out.extend_from_slice(&rest[1..rest.len() - 1]);
    }
    out.extend_from_slice(b"}}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_response_is_the_same_json_as_built_from_values() {
        let page = json!({"name": "page", "inputSchema": {"type": "object"}});
        for tools in [
            json!([]),
            json!([{"name": "a", "inputSchema": {"type": "object"}}, {"name": "b"}]),
        ] {
            let bytes = serde_json::to_vec(&tools).unwrap();
            for (extra, id) in [
                (None, json!(7)),
                (Some(&page), json!("x\"y")),
                (Some(&page), json!(null)),
            ] {
                let mut all = tools.clone();
                all.as_array_mut().unwrap().extend(extra.cloned());
                let text = extra.map(Value::to_string);
                let response = |modern| {
                    let json = response_json(&id, &bytes, text.as_deref(), modern);
                    serde_json::from_slice::<Value>(&json).unwrap()
                };
                assert_eq!(
                    response(false),
                    json!({"jsonrpc": "2.0", "id": id, "result": {"tools": all}})
                );
                let mut expected = Map::new();
                expected.insert("tools".into(), all.clone());
                crate::era::stamp_result("tools/list", &mut expected);
                assert_eq!(response(true)["result"], Value::Object(expected));
                assert_eq!(response(true)["result"]["resultType"], "complete");
            }
        }
    }
}
