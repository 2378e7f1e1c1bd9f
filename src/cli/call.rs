//! One-shot commands that print one envelope: `call` (a tool through the proxy) and
//! `envelope` (stdin's tool result through the envelope alone).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::common::{
    headless_client, headless_proxy, interrupted, load_config, runtime, stop_signal,
    transcript_writer, usage,
};
use super::GlobalArgs;
use crate::envelope::{summarize_tool_result, Envelope, ToolResult};

pub(super) fn run_call(
    global: &GlobalArgs,
    tool: &str,
    args_json: Option<&str>,
    transcript: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let arguments: Value = match args_json {
        None => json!({}),
        Some(text) => serde_json::from_str(text)
            .context("ARGS_JSON is not valid JSON")
            .map_err(usage)?,
    };
    if !arguments.is_object() {
        return Err(usage(anyhow::anyhow!(
            "ARGS_JSON must be a JSON object, like '{{\"key\": \"value\"}}'"
        )));
    }
    let config = load_config(global)?;
    let page_tool = config.paging.enabled && tool == config.paging.tool_name;
    let start_only = if page_tool {
        // The page tool answers from the proxy's own store, which no server fills here.
        Some(Vec::new())
    } else {
        // Only the servers the name can be of, when the config alone says which: the others
        // are down, and the names are `serve`'s all the same.
        config.servers_for_call(tool)
    };
    // Before any server starts: a transcript that cannot be recorded is an error.
    let writer = transcript_writer(&config, transcript)?;
    let rt = runtime()?;
    let envelope = rt.block_on(async {
        let proxy = headless_proxy(&config, writer.clone());
        if let Some(servers) = start_only {
            proxy.start_only(servers);
        }
        let work = async {
            proxy
                .start_servers(headless_client("mcp-envelope-call"))
                .await;
            let params = json!({"name": tool, "arguments": arguments});
            proxy
                .call_tool(&json!(1), Some(params), Default::default())
                .await
        };
        // Servers are stopped on every path, a signal included.
        let result = tokio::select! {
            done = work => Some(done),
            _ = stop_signal() => None,
        };
        proxy.shutdown().await;
        let Some(result) = result else {
            return Ok(None);
        };
        if let Some(w) = &writer {
            w.flush();
        }
        match result {
            Ok(result) => serde_json::from_value::<Envelope>(result["structuredContent"].clone())
                .map(Some)
                .context("the proxy built an invalid envelope"),
            Err(err) => bail!("invalid call: {err}"),
        }
    })?;
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    let Some(mut envelope) = envelope else {
        return Ok(interrupted("call"));
    };
    if page_tool {
        envelope = without_a_store(envelope);
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", envelope.to_json()).context("writing stdout")?;
    Ok(if envelope.status == crate::envelope::Status::Error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The page tool's `not_found` envelope, told the reason that holds for a one-shot `call`:
/// no call of this process was ever truncated, so none can be paged (README, "call").
fn without_a_store(envelope: Envelope) -> Envelope {
    let Some(message) = envelope.content.strip_prefix("not_found: ") else {
        return envelope;
    };
    // "no rows kept for call_id '<id>': unknown, …" (src/page_tool.rs); the id may hold ':'.
    let head = message
        .find("': unknown")
        .map_or(message, |end| &message[..end + 1]);
    let message = format!(
        "{head}: a one-shot `call` keeps no paging store (each `call` is its own process); \
         page the result in the session that made it (`serve`, your client), or call the tool \
         again with a larger budget"
    );
    Envelope::error(&envelope.call_id, &envelope.tool, "not_found", &message)
}

/// `mcp-envelope envelope --budget N`: stdin JSON result → stdout envelope line.
pub(super) fn run_envelope(budget: usize) -> anyhow::Result<ExitCode> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("reading stdin")
        .map_err(usage)?;
    let value: Value = serde_json::from_str(&input)
        .context("stdin is not valid JSON")
        .map_err(usage)?;
    let result = ToolResult::from_json(&value)
        .context("invalid tool result")
        .map_err(usage)?;
    let envelope = summarize_tool_result(&result, budget);
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", envelope.to_json()).context("writing stdout")?;
    Ok(ExitCode::SUCCESS)
}
