//! The `tools/list` answer (MCP 2025-06-18 "Tools: Listing Tools"): the catalog's tools, then
//! the page tool when paging is on, serialized once per catalog and kept; each request only
//! wraps those bytes in its JSON-RPC response. A new catalog (a server's tools changed, a
//! restart, a reload) is a new `Arc`, so the kept bytes are never stale.

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use super::Core;
use crate::catalog::Catalog;
use crate::page_tool::Pager;

/// The serialized tools array of one catalog, with the page tool's name it was made for.
#[derive(Default)]
pub(super) struct ToolsListCache {
    kept: Mutex<Option<Kept>>,
}

struct Kept {
    catalog: Arc<Catalog>,
    page_tool: Option<String>,
    json: Arc<[u8]>,
}

impl Core {
    /// The tools a session offers as one JSON array (compact JSON text): the catalog's tools
    /// (a server's tool named like the page tool left out), then the page tool when `pager`
    /// is given. Made once per catalog and page tool, then shared.
    pub(super) fn listed_tools_json(&self, pager: Option<&Pager>) -> Arc<[u8]> {
        let catalog = self.catalog();
        let page_tool = pager.map(|p| p.tool_name());
        let mut kept = self.tools_list.kept.lock().unwrap();
        if let Some(k) = kept.as_ref() {
            if Arc::ptr_eq(&k.catalog, &catalog) && k.page_tool.as_deref() == page_tool {
                return k.json.clone();
            }
        }
        let json: Arc<[u8]> = tools_array_json(&catalog, pager).into();
        *kept = Some(Kept {
            catalog,
            page_tool: page_tool.map(str::to_owned),
            json: json.clone(),
        });
        json
    }
}

/// `[tool,…]` of `catalog` and the page tool of `pager`: the catalog's tool texts joined.
fn tools_array_json(catalog: &Catalog, pager: Option<&Pager>) -> Vec<u8> {
    let page_tool = pager.map(|p| (p.tool_name(), p.tool_definition().to_string()));
    let bytes: usize = catalog.tools().iter().map(|t| t.as_str().len() + 1).sum();
    let mut out = Vec::with_capacity(bytes + 2 + page_tool.as_ref().map_or(0, |p| p.1.len()));
    out.push(b'[');
    let listed = catalog
        .tools()
        .iter()
        .zip(catalog.names())
        .filter(|(_, name)| {
            page_tool
                .as_ref()
                .map_or(true, |(page, _)| name.as_str() != *page)
        })
        .map(|(tool, _)| tool.as_str())
        .chain(page_tool.as_ref().map(|(_, def)| def.as_str()));
    for (i, tool) in listed.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(tool.as_bytes());
    }
    out.push(b']');
    out
}

/// The whole JSON-RPC response to `tools/list` request `id` around the serialized `tools`
/// array: `{"jsonrpc":"2.0","id":…,"result":{"tools":[…]}}`, the result stamped for an MCP
/// 2026-07-28 request when `modern` ([`crate::era::stamp_result`]). The array is copied once;
/// nothing is parsed.
pub(super) fn response_json(id: &Value, tools: &[u8], modern: bool) -> Vec<u8> {
    let id = serde_json::to_vec(id).expect("a JSON value always serializes");
    // The rest of the result, after `tools`: empty, or the modern stamps.
    let mut rest = Map::new();
    if modern {
        crate::era::stamp_result("tools/list", &mut rest);
    }
    let rest = serde_json::to_vec(&rest).expect("a JSON value always serializes");
    let mut out = Vec::with_capacity(tools.len() + id.len() + rest.len() + 48);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(&id);
    out.extend_from_slice(b",\"result\":{\"tools\":");
    out.extend_from_slice(tools);
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
        let tools = json!([{"name": "a", "inputSchema": {"type": "object"}}, {"name": "b"}]);
        let bytes = serde_json::to_vec(&tools).unwrap();
        for id in [json!(7), json!("x\"y"), json!(null)] {
            let plain: Value = serde_json::from_slice(&response_json(&id, &bytes, false)).unwrap();
            assert_eq!(
                plain,
                json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}})
            );
            let modern: Value = serde_json::from_slice(&response_json(&id, &bytes, true)).unwrap();
            let mut expected = Map::new();
            expected.insert("tools".into(), tools.clone());
            crate::era::stamp_result("tools/list", &mut expected);
            assert_eq!(modern["result"], Value::Object(expected));
            assert_eq!(modern["result"]["resultType"], "complete");
        }
    }
}
