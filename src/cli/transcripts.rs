//! Commands that read a transcript: `replay` (and `replay --live`), `render`, `stats`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use serde_json::json;

use super::common::{
    headless_client, headless_proxy, interrupted, load_config, runtime, stop_signal, usage,
};
use super::GlobalArgs;
use crate::config::Config;
use crate::drift::{self, DriftOptions, Verdict};
use crate::trajectory;
use crate::transcript::{self, CallRecord, TranscriptWriter};
use envelope_core::replay::live;

/// Reads the transcript at `path` (unreadable or broken: a usage error), warning on stderr
/// about a broken last line.
fn read_transcript(path: &Path) -> anyhow::Result<transcript::Transcript> {
    let t = transcript::read_transcript(path).map_err(usage)?;
    if let Some(w) = &t.broken_last_line {
        eprintln!("warning: {w}");
    }
    Ok(t)
}

/// How `replay` names a record: `TOOL ARGUMENTS (call_id=ID)`, the tool and the call_id with
/// control and invisible characters escaped (`envelope_core::trajectory::escape_line`): a
/// client's call_id `"B1\n"` must not break the report's line (the arguments are JSON text,
/// escaped already).
fn label(record: &CallRecord) -> String {
    use envelope_core::trajectory::escape_line;
    format!(
        "{} {} (call_id={})",
        escape_line(&record.tool),
        record.arguments,
        escape_line(&record.call_id)
    )
}

/// `replay`: each record's envelope made again from its recorded outcome (with `--config`'s
/// budgets when given) and compared; `--update` rewrites the changed ones.
pub(super) fn run_replay(
    global: &GlobalArgs,
    path: &Path,
    update: bool,
) -> anyhow::Result<ExitCode> {
    let config = match &global.config {
        // Offline: budgets and mapping settings only, so unset `${VAR}`s do not matter.
        Some(p) => Some(Config::load_offline(p).map_err(usage)?),
        None => None,
    };
    let mut t = read_transcript(path)?;
    let results = transcript::replay(&t, config.as_ref());
    let mut out = std::io::stdout().lock();
    let (mut passed, mut failed, mut skipped) = (0usize, 0usize, 0usize);
    for (record, result) in t.records.iter().zip(&results) {
        if let Some(reason) = envelope_core::replay::skip_reason(record) {
            skipped += 1;
            let reason = envelope_core::trajectory::escape_line(reason);
            writeln!(out, "skipped {}: {reason}", label(record))?;
        } else if result.matches() {
            passed += 1;
            writeln!(out, "ok      {}", label(record))?;
        } else {
            failed += 1;
            writeln!(out, "changed {}", label(record))?;
            for line in result.diff() {
                writeln!(out, "{line}")?;
            }
        }
    }
    match skipped {
        0 => writeln!(out, "{passed} passed, {failed} failed")?,
        _ => writeln!(out, "{passed} passed, {failed} failed, {skipped} skipped")?,
    }
    if update && failed > 0 {
        transcript::apply_update(&mut t.records, results, config.as_ref());
        transcript::rewrite(path, &t).with_context(|| format!("rewriting {}", path.display()))?;
        writeln!(out, "updated {failed} envelope(s) in {}", path.display())?;
        return Ok(ExitCode::SUCCESS);
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `replay --live`: makes every recorded call again, in recorded order, through the same path
/// as `serve` (recorded by a temporary transcript), and compares each with its record; a call
/// of the page tool is made again after the call it pages ([`live::plan`]).
pub(super) fn run_replay_live(
    global: &GlobalArgs,
    path: &Path,
    ignore_content: bool,
) -> anyhow::Result<ExitCode> {
    let config = load_config(global)?;
    let t = read_transcript(path)?;
    let plans = live::plan(&t.records);
    let Some(live) = call_again(&config, &t.records, &plans)? else {
        return Ok(interrupted("replay --live"));
    };
    let opts = DriftOptions { ignore_content };
    let drifted = print_verdicts(&t.records, &plans, &live, &config, opts)?;
    Ok(if drifted == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The calls `replay --live` made: their records in the order made, and for each record of
/// the transcript the index of its live record (`None`: not made again, or not recorded).
struct LiveRun {
    records: Vec<CallRecord>,
    of: Vec<Option<usize>>,
}

impl LiveRun {
    /// The live records in the order made (each with its `seq`, the order it was recorded in,
    /// which is the order made: the calls are made one at a time) of
    /// the calls of `made` (the index of each call's transcript record, in the order made),
    /// matched to the transcript `records` by that order and the recorded `call_id`.
    fn new(mut live: Vec<CallRecord>, made: &[usize], records: &[CallRecord]) -> LiveRun {
        live.sort_by_key(|r| r.seq);
        let mut of = vec![None; records.len()];
        for (k, r) in live.iter().enumerate() {
            let i = usize::try_from(r.seq).ok().and_then(|seq| made.get(seq));
            if let Some(&i) = i.filter(|&&i| records[i].call_id == r.call_id) {
                of[i] = Some(k);
            }
        }
        LiveRun { records: live, of }
    }
}

/// Makes again each record's call that `plans` says to (JSON-RPC id = its recorded `call_id`,
/// so a page call's arguments name the live call it pages) through a headless proxy: the live
/// records, or `None` when a signal stopped it.
fn call_again(
    config: &Arc<Config>,
    records: &[CallRecord],
    plans: &[live::LivePlan],
) -> anyhow::Result<Option<LiveRun>> {
    let scratch =
        std::env::temp_dir().join(format!("mcp-envelope-live-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&scratch);
    let made: Vec<usize> = (0..records.len())
        .filter(|&i| plans[i].is_called())
        .collect();
    let writer = TranscriptWriter::open(scratch.clone(), Vec::new())
        .context("the scratch transcript of the live calls")?;
    let rt = runtime()?;
    let finished = rt.block_on(async {
        let proxy = headless_proxy(config, Some(writer.clone()));
        let work = async {
            proxy
                .start_servers(headless_client("mcp-envelope-replay"))
                .await;
            for record in made.iter().map(|&i| &records[i]) {
                let params = json!({"name": record.tool, "arguments": record.arguments});
                let _ = proxy
                    .call_tool(&json!(record.call_id), Some(params), Default::default())
                    .await;
            }
        };
        let finished = tokio::select! {
            () = work => true,
            () = stop_signal() => false,
        };
        proxy.shutdown().await;
        writer.flush();
        finished
    });
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    let live = transcript::read_transcript(&scratch);
    let _ = std::fs::remove_file(&scratch);
    if !finished {
        return Ok(None);
    }
    let live = live.context("reading back the live calls")?;
    Ok(Some(LiveRun::new(live.records, &made, records)))
}

/// The verdict on the `i`-th record: skipped as planned, or compared with its live call (a
/// page with the live calls made before it).
fn verdict(
    records: &[CallRecord],
    i: usize,
    plan: &live::LivePlan,
    live: &LiveRun,
    config: &Config,
    opts: DriftOptions,
) -> Verdict {
    let record = &records[i];
    let now = live.of[i];
    match (plan, now) {
        (live::LivePlan::Skip(why), _) => Verdict::Skipped(why.clone()),
        (_, None) => Verdict::Skipped("the call could not be made again".into()),
        (live::LivePlan::Call, Some(k)) => drift::compare(record, &live.records[k], config, opts),
        (live::LivePlan::Page { .. }, Some(k)) => {
            let settings = config.tool_settings(&record.server, &record.server_tool);
            let (before, now) = (&live.records[..k], &live.records[k]);
            live::compare_page(&records[..i], record, before, now, settings, opts)
        }
    }
}

/// Prints each record's verdict and a summary line; returns the number that drifted.
fn print_verdicts(
    records: &[CallRecord],
    plans: &[live::LivePlan],
    live: &LiveRun,
    config: &Config,
    opts: DriftOptions,
) -> anyhow::Result<usize> {
    let mut out = std::io::stdout().lock();
    let (mut same, mut drifted, mut skipped) = (0usize, 0usize, 0usize);
    for (i, (record, plan)) in records.iter().zip(plans).enumerate() {
        match verdict(records, i, plan, live, config, opts) {
            Verdict::Same => {
                same += 1;
                writeln!(out, "same    {}", label(record))?;
            }
            Verdict::Drift(lines) => {
                drifted += 1;
                writeln!(out, "drift   {}", label(record))?;
                for line in lines {
                    writeln!(out, "{line}")?;
                }
            }
            Verdict::Skipped(why) => {
                skipped += 1;
                let why = envelope_core::trajectory::escape_line(&why);
                writeln!(out, "skipped {}: {why}", label(record))?;
            }
        }
    }
    writeln!(out, "{same} passed, {drifted} failed, {skipped} skipped")?;
    Ok(drifted)
}

pub(super) fn run_render(path: &Path, opts: trajectory::RenderOptions) -> anyhow::Result<ExitCode> {
    let t = read_transcript(path)?;
    let text = trajectory::render(&t.records, &opts);
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("writing stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// `mcp-envelope stats`: per-tool statistics of a transcript as a table or JSON on stdout, and
/// optionally an HTML report.
pub(super) fn run_stats(
    path: &Path,
    json: bool,
    html: Option<&Path>,
    tokenizer: crate::budget::Tokenizer,
) -> anyhow::Result<ExitCode> {
    let t = read_transcript(path)?;
    let stats = crate::stats::compute(&t.records, tokenizer);
    if let Some(file) = html {
        let page = crate::stats::render_html(&stats, &path.display().to_string());
        std::fs::write(file, page)
            .with_context(|| format!("writing {}", file.display()))
            .map_err(usage)?;
    }
    let text = if json {
        crate::stats::render_json(&stats) + "\n"
    } else {
        crate::stats::render_table(&stats)
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("writing stdout")?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record's tool and call_id are the client's text: a line break or a bidirectional
    /// control in them stays escaped on the report's one line (found by a fresh-user test).
    #[test]
    fn a_label_keeps_the_clients_control_characters_escaped() {
        let record: CallRecord = serde_json::from_value(serde_json::json!({
            "v": 1, "started_at": "2026-12-04T00:00:00.000Z", "seq": 0,
            "call_id": "B1\n\u{202e}", "tool": "t\r", "server": "s", "server_tool": "t",
            "arguments": {"a": "x\ny"}, "char_budget": 100, "timeout_ms": 1000,
            "media": "passthrough", "outcome": {"kind": "result", "result": {"content": []}},
            "envelope": {"call_id": "B1\n", "tool": "t", "status": "ok", "content": "",
                "omitted": 0, "retryable": false},
            "duration_ms": 0
        }))
        .unwrap();
        let shown = label(&record);
        assert_eq!(shown, r#"t\r {"a":"x\ny"} (call_id=B1\n\u{202e})"#);
    }
}
