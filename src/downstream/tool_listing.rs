//! A server's tool list: every page of `tools/list` (MCP "Utilities: Pagination"), kept as
//! the servers' JSON text of each tool ([`ServerTool`]), never as a value tree: a large page
//! (one unparsed line, [`ResultBody::Raw`]) is read with each tool borrowed as raw text.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tracing::{debug, warn};

use super::{Connection, Downstream, ResultBody};

/// Most `tools/list` pages fetched from one server (MCP "Utilities: Pagination" sets no limit;
/// a server that never stops paging must not hold the proxy).
pub const MAX_TOOL_PAGES: usize = 100;

/// Every tool of a listing (each one's JSON text), and why paging stopped early, if it did.
pub(super) type Listing = (Vec<Box<RawValue>>, Option<String>);

/// Fetches every page of `tools/list`: stops early, keeping the tools listed so far and saying
/// why, on a cursor seen before, after [`MAX_TOOL_PAGES`] pages, or once more tools than a
/// server may offer were listed.
pub(super) async fn list_all_tools(
    conn: &Connection,
    timeout: Duration,
) -> Result<Listing, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    let mut seen = std::collections::HashSet::new();
    for _page in 0..MAX_TOOL_PAGES {
        let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
        let body = conn
            .request_raw("tools/list", params.as_ref(), timeout)
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?
            .map_err(|e| format!("tools/list was refused: {e}"))?;
        let Some(next) = read_page(body, &mut tools)? else {
            return Ok((tools, None));
        };
        if !seen.insert(next.to_string()) {
            let why = format!("tools/list repeated the cursor {next}; stopped paging");
            return Ok((tools, Some(why)));
        }
        if tools.len() > crate::tool_validation::MAX_TOOLS_PER_SERVER {
            return Ok((
                tools,
                Some("tools/list offers too many tools; stopped paging".into()),
            ));
        }
        cursor = Some(next);
    }
    let why = format!("tools/list has more than {MAX_TOOL_PAGES} pages; stopped paging");
    Ok((tools, Some(why)))
}

/// A `tools/list` response line, read only as far as its page.
#[derive(Deserialize)]
struct PageLine<'a> {
    #[serde(borrow)]
    result: Page<'a>,
}

/// A `tools/list` result: each tool borrowed as raw JSON text, and the cursor.
#[derive(Deserialize)]
struct Page<'a> {
    #[serde(borrow)]
    tools: Vec<&'a RawValue>,
    #[serde(default, rename = "nextCursor")]
    next_cursor: Option<Value>,
}

/// Appends the JSON text of each tool of one `tools/list` answer to `tools`; returns its
/// `nextCursor` (`None` when it has none or it is `null`). A large answer's line is read
/// without a value tree; a small one was parsed already, each tool is written back as text.
fn read_page(body: ResultBody, tools: &mut Vec<Box<RawValue>>) -> Result<Option<Value>, String> {
    match body {
        ResultBody::Raw(raw) => {
            let line: PageLine<'_> = serde_json::from_str(raw.as_str())
                .map_err(|e| format!("tools/list answer is not a list of tools: {e}"))?;
            tools.extend(line.result.tools.into_iter().map(RawValue::to_owned));
            Ok(line.result.next_cursor)
        }
        ResultBody::Value(mut result) => {
            match result.get_mut("tools").map(Value::take) {
                Some(Value::Array(page)) => tools.extend(page.iter().map(|tool| {
                    serde_json::value::to_raw_value(tool).expect("a JSON value always serializes")
                })),
                _ => return Err("tools/list answer has no `tools` array".into()),
            }
            Ok(result
                .get_mut("nextCursor")
                .map(Value::take)
                .filter(|c| !c.is_null()))
        }
    }
}

/// Keeps the well-formed tools of a listing ([`crate::tool_validation::admission`]; over HTTP
/// in 2026-07-28 also [`super::remote::without_invalid_header_marks`]) as the server's tools,
/// and the ones dropped for their definitions ([`Downstream::dropped_tool`]); logs the
/// warnings when they differ from the last listing's.
pub(super) fn store_tools(ds: &Downstream, conn: &Connection, (tools, paging): Listing) {
    let tools = without_secrets(&ds.inner.secrets, tools);
    let crate::tool_validation::Admission {
        tools,
        mut warnings,
        dropped,
    } = crate::tool_validation::admission(ds.name(), tools);
    *ds.inner.dropped_tools.write().unwrap() = dropped;
    let tools = super::remote::without_invalid_header_marks(ds, conn, tools, &mut warnings);
    if let Some(why) = paging {
        warnings.insert(0, format!("server '{}': {why}", ds.name()));
    }
    let mut last = ds.inner.tool_warnings.lock().unwrap();
    if *last != warnings {
        for w in &warnings {
            warn!(server = %ds.name(), "{w}");
        }
        *last = warnings;
    }
    drop(last);
    let tools = Arc::new(tools);
    *ds.inner.tools.write().unwrap() = Some(tools.clone());
    if let Some(hook) = &ds.inner.spec.on_listed {
        (hook.0)(ds.name(), &tools);
    }
}

/// The tools of a listing without the secrets the proxy gives their server
/// ([`crate::redact::SecretValues`]), as its answers are in [`Downstream::request`]: a
/// description that repeats a token would otherwise reach every client's model. Only a tool
/// whose text holds a secret is parsed; a server given none costs one emptiness check.
fn without_secrets(
    secrets: &crate::redact::SecretValues,
    mut tools: Vec<Box<RawValue>>,
) -> Vec<Box<RawValue>> {
    if secrets.is_empty() {
        return tools;
    }
    for tool in tools.iter_mut().filter(|t| secrets.found_in(t.get())) {
        let Ok(mut value) = serde_json::from_str::<Value>(tool.get()) else {
            continue;
        };
        secrets.redact_json(&mut value);
        *tool = serde_json::value::to_raw_value(&value).expect("a JSON value always serializes");
    }
    tools
}

/// Logs (at debug, once per start) the tools that need task-augmented execution: they are not
/// offered, and `check` lists them as warnings.
pub(super) fn log_task_only(ds: &Downstream) {
    let Some(tools) = ds.tools() else {
        return;
    };
    for tool in tools.iter().filter(|t| t.requires_task()) {
        debug!(server = %ds.name(), tool = %tool.name(), "tool requires task-augmented execution, which is not proxied; not listed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(tools: &[Box<RawValue>]) -> Vec<&str> {
        tools.iter().map(|t| t.get()).collect()
    }

    #[test]
    fn a_raw_page_keeps_each_tools_text_and_its_cursor() {
        let pad = "x".repeat(crate::rpc::body::RAW_RESULT_MIN_BYTES);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":3,"result":{{"tools":[{{"name":"a", "d":"{pad}"}}, 7 ,{{"name":"b","x":[1.50]}}],"nextCursor":"c2"}}}}"#
        );
        let (_, raw) = crate::rpc::body::fast_response(
            line.into_bytes(),
            crate::rpc::body::RAW_RESULT_MIN_BYTES,
        )
        .unwrap();
        let mut tools = Vec::new();
        let next = read_page(ResultBody::Raw(raw), &mut tools).unwrap();
        assert_eq!(next, Some(json!("c2")));
        assert_eq!(texts(&tools)[1..], ["7", r#"{"name":"b","x":[1.50]}"#]);
        assert!(texts(&tools)[0].starts_with(r#"{"name":"a", "d":"xxx"#));
    }

    #[test]
    fn a_parsed_page_gives_each_tools_text() {
        let mut tools = Vec::new();
        let page = json!({"tools": [{"name": "a", "k": [1]}], "nextCursor": null});
        let next = read_page(ResultBody::Value(page), &mut tools).unwrap();
        assert_eq!(next, None);
        assert_eq!(texts(&tools), [r#"{"name":"a","k":[1]}"#]);
        let err = read_page(ResultBody::Value(json!({"tools": 1})), &mut tools).unwrap_err();
        assert!(err.contains("no `tools` array"), "{err}");
    }
}
