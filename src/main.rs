//! The `mcp-envelope` binary: parses the command line, sets up logging (stderr or a log file,
//! never stdout), runs the library and maps errors to exit codes (0 success, 1 failure found,
//! 2 usage, config or input error).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context};
use clap::Parser;
use mcp_envelope::cli::{BudgetUnit, CassetteMode, Cli, Command, GlobalArgs, LogLevel};
use mcp_envelope::config::{self, Config};
use mcp_envelope::downstream::ClientInit;
use mcp_envelope::envelope::{summarize_tool_result, Envelope, ToolResult};
use mcp_envelope::proxy::{self, Core, LATEST_PROTOCOL_VERSION};
use mcp_envelope::trajectory;
use mcp_envelope::transcript::{self, TranscriptWriter};
use serde_json::{json, Value};

/// An error that exits with code 2 (usage, config or unreadable input).
#[derive(Debug)]
struct UsageError(anyhow::Error);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}
impl std::error::Error for UsageError {}

fn usage(err: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(UsageError(err.into()))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Commands that print a report are quiet unless asked: warnings only.
    let default_level = match cli.command {
        Some(Command::Check | Command::Install(_) | Command::Uninstall(_)) => LogLevel::Warn,
        _ => LogLevel::Info,
    };
    if let Err(e) = init_logging(&cli.global, default_level) {
        eprintln!("mcp-envelope: {e:#}");
        return ExitCode::from(2);
    }
    let name = subcommand_name(cli.command.as_ref());
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("mcp-envelope {name}: {err:#}");
            if err.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn subcommand_name(command: Option<&Command>) -> &'static str {
    match command {
        None | Some(Command::Serve { .. }) => "serve",
        Some(Command::Call { .. }) => "call",
        Some(Command::Envelope { .. }) => "envelope",
        Some(Command::Replay { .. }) => "replay",
        Some(Command::Render { .. }) => "render",
        Some(Command::Stats { .. }) => "stats",
        Some(Command::Check) => "check",
        Some(Command::Import { .. }) => "import",
        Some(Command::ConfigSchema) => "config-schema",
        Some(Command::Install(_)) => "install",
        Some(Command::Uninstall(_)) => "uninstall",
    }
}

/// Logs go to stderr, or to `--log-file`; never to stdout (it carries the protocol).
fn init_logging(global: &GlobalArgs, default_level: LogLevel) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    let level = global.log_level.unwrap_or(default_level);
    // The HTTP stack's own debug lines name request URLs, which may carry a secret: they are
    // shown only when asked for by name in RUST_LOG.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new(format!(
            "{},reqwest=info,hyper=info,hyper_util=info,rustls=info",
            level.as_str()
        ))
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    match &global.log_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open log file {}", path.display()))?;
            builder
                .with_ansi(false)
                .with_writer(Mutex::new(file))
                .init();
        }
        // Colours only on a terminal: clients capture stderr into log files (issue 7).
        None => {
            use std::io::IsTerminal;
            let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            builder.with_ansi(ansi).with_writer(std::io::stderr).init()
        }
    }
    Ok(())
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        None => run_serve(&cli.global, None, None),
        Some(Command::Serve {
            transcript,
            cassette,
            cassette_mode,
            cassette_ignore,
            http,
        }) => {
            if let Some(serving) = http.resolve().map_err(|e| usage(anyhow::anyhow!(e)))? {
                if cassette.is_some() {
                    bail!(usage(anyhow::anyhow!(
                        "--cassette cannot be used with --http"
                    )));
                }
                return run_serve_http(&cli.global, transcript, serving);
            }
            let cassette = cassette.map(|path| (path, cassette_mode, cassette_ignore));
            run_serve(&cli.global, transcript, cassette)
        }
        Some(Command::Call {
            tool,
            args_json,
            transcript,
        }) => run_call(&cli.global, &tool, args_json.as_deref(), transcript),
        Some(Command::Envelope { budget }) => run_envelope(budget),
        Some(Command::Replay {
            transcript,
            live: true,
            ignore_content,
            ..
        }) => run_replay_live(&cli.global, &transcript, ignore_content),
        Some(Command::Replay {
            transcript, update, ..
        }) => run_replay(&cli.global, &transcript, update),
        Some(Command::Render {
            transcript,
            budget,
            budget_unit,
            tokenizer,
        }) => {
            let tokens = (budget_unit == BudgetUnit::Tokens).then_some(tokenizer);
            run_render(&transcript, trajectory::RenderOptions { budget, tokens })
        }
        Some(Command::Stats {
            transcript,
            json,
            html,
            tokenizer,
        }) => run_stats(&transcript, json, html.as_deref(), tokenizer),
        Some(Command::Check) => run_check(&cli.global),
        Some(Command::Import { file }) => run_import(&file),
        Some(Command::ConfigSchema) => run_config_schema(),
        Some(Command::Install(args)) => run_install(&cli.global, &args, true),
        Some(Command::Uninstall(args)) => run_install(&cli.global, &args, false),
    }
}

/// Finds and loads the config (`--config`, `MCP_ENVELOPE_CONFIG`, `./mcp-envelope.toml`,
/// `$XDG_CONFIG_HOME/mcp-envelope/config.toml`).
fn load_config(global: &GlobalArgs) -> anyhow::Result<Arc<Config>> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let env = |k: &str| std::env::var(k).ok();
    let path = config::discover(global.config.as_deref(), &env, &cwd, &|p: &Path| {
        p.is_file()
    })
    .map_err(usage)?;
    let config = Config::load(&path).map_err(usage)?;
    Ok(Arc::new(config))
}

fn transcript_writer(config: &Config, flag: Option<PathBuf>) -> Option<TranscriptWriter> {
    let path = flag.or_else(|| config.transcript.path.clone())?;
    Some(TranscriptWriter::start(
        path,
        config.transcript.redact_keys.clone(),
    ))
}

/// The async runtime: one thread for every task. Handing each message between worker threads
/// cost more than the work itself (issue 6, BENCHMARKS.md); parsing very large messages goes
/// to the blocking pool instead (`mcp_envelope::offload`).
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Resolves on SIGTERM, SIGINT or SIGHUP (a closed terminal), the signals that end a session.
async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) {
        (Ok(mut term), Ok(mut int), Ok(mut hup)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
                _ = hup.recv() => {}
            }
        }
        _ => std::future::pending::<()>().await,
    }
}

/// A proxy with no client (for `call` and `check`): no session, so a server's request is
/// refused. Start its servers with [`headless_client`].
fn headless_proxy(config: &Arc<Config>, transcript: Option<TranscriptWriter>) -> Arc<Core> {
    Core::new(config.clone(), transcript)
}

/// The `initialize` details sent to servers when there is no client.
fn headless_client(name: &str) -> ClientInit {
    ClientInit {
        protocol_version: LATEST_PROTOCOL_VERSION.to_owned(),
        capabilities: json!({}),
        client_info: json!({"name": name, "version": env!("CARGO_PKG_VERSION")}),
    }
}

/// Exit code for a command stopped by a signal (128 + SIGINT, the shell convention).
const EXIT_INTERRUPTED: u8 = 130;

/// `serve --cassette`: the transcript, the mode and the ignored argument keys.
type CassetteArgs = (PathBuf, CassetteMode, Vec<String>);

/// Reads the cassette for `serve --cassette` (a bad transcript is a usage error naming its
/// line); with `record-missing` it is also where new calls are recorded unless `--transcript`
/// says otherwise.
fn load_cassette(
    args: Option<CassetteArgs>,
    transcript: &mut Option<PathBuf>,
) -> anyhow::Result<Option<mcp_envelope::cassette::Playback>> {
    let Some((path, mode, ignored)) = args else {
        return Ok(None);
    };
    let record_missing = mode == CassetteMode::RecordMissing;
    // Recording into a cassette that does not exist yet starts it (the first run of a test).
    let t = if record_missing && !path.exists() {
        transcript::Transcript::default()
    } else {
        transcript::read_transcript(&path).map_err(usage)?
    };
    if let Some(w) = &t.broken_last_line {
        tracing::warn!("{w}");
    }
    if record_missing && transcript.is_none() {
        *transcript = Some(path);
    }
    let cassette = mcp_envelope::cassette::Cassette::new(&t, ignored);
    Ok(Some(mcp_envelope::cassette::Playback::new(
        cassette,
        record_missing,
    )))
}

fn run_serve(
    global: &GlobalArgs,
    mut transcript: Option<PathBuf>,
    cassette: Option<CassetteArgs>,
) -> anyhow::Result<ExitCode> {
    let strict_cassette = cassette
        .as_ref()
        .is_some_and(|(_, mode, _)| *mode == CassetteMode::Strict);
    let config = match load_config(global) {
        // A strict cassette starts no server: it needs no config file (budgets are built-in).
        Err(_) if strict_cassette && global.config.is_none() => {
            let none = Path::new("(no config file)");
            Arc::new(Config::parse("", none, &|k: &str| std::env::var(k).ok()).map_err(usage)?)
        }
        other => other?,
    };
    let cassette = load_cassette(cassette, &mut transcript)?;
    let rt = runtime()?;
    rt.block_on(async {
        let writer = transcript_writer(&config, transcript);
        let stop = stop_signal();
        let (stdio, _restore_flags) = mcp_envelope::stdio::open()?;
        tracing::debug!(reactor_driven = stdio.reactor_driven, "stdin/stdout opened");
        proxy::serve(config, stdio.input, stdio.output, writer, cassette, stop).await
    })?;
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(ExitCode::SUCCESS)
}

/// `serve --http`: the proxy over streamable HTTP until a signal.
fn run_serve_http(
    global: &GlobalArgs,
    transcript: Option<PathBuf>,
    (addr, options): (std::net::SocketAddr, mcp_envelope::serve_http::HttpOptions),
) -> anyhow::Result<ExitCode> {
    let config = load_config(global)?;
    let rt = runtime()?;
    rt.block_on(async {
        let writer = transcript_writer(&config, transcript);
        mcp_envelope::serve_http::run(addr, options, config, writer, stop_signal()).await
    })
    .with_context(|| format!("serving HTTP at {addr}"))?;
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(ExitCode::SUCCESS)
}

fn run_call(
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
    let rt = runtime()?;
    let envelope = rt.block_on(async {
        let writer = transcript_writer(&config, transcript);
        let proxy = headless_proxy(&config, writer.clone());
        let work = async {
            proxy
                .start_servers(headless_client("mcp-envelope-call"))
                .await;
            let params = json!({"name": tool, "arguments": arguments});
            proxy
                .call_tool(&json!(1), Some(params), Arc::new(Mutex::new(None)))
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
    let Some(envelope) = envelope else {
        rt.shutdown_timeout(std::time::Duration::from_secs(1));
        eprintln!("mcp-envelope call: interrupted; servers stopped");
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    };
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", envelope.to_json()).context("writing stdout")?;
    Ok(
        if envelope.status == mcp_envelope::envelope::Status::Error {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// `mcp-envelope envelope --budget N`: stdin JSON result → stdout envelope line.
fn run_envelope(budget: usize) -> anyhow::Result<ExitCode> {
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

fn run_replay(global: &GlobalArgs, path: &Path, update: bool) -> anyhow::Result<ExitCode> {
    let config = match &global.config {
        Some(p) => Some(Config::load(p).map_err(usage)?),
        None => None,
    };
    let mut t = transcript::read_transcript(path).map_err(usage)?;
    if let Some(w) = &t.broken_last_line {
        eprintln!("warning: {w}");
    }
    let results = transcript::replay(&t, config.as_ref());
    let mut out = std::io::stdout().lock();
    let (mut passed, mut failed) = (0usize, 0usize);
    for (record, result) in t.records.iter().zip(&results) {
        let label = format!(
            "{} {} (call_id={})",
            record.tool, record.arguments, record.call_id
        );
        if result.matches() {
            passed += 1;
            writeln!(out, "ok      {label}")?;
        } else {
            failed += 1;
            writeln!(out, "changed {label}")?;
            for line in result.diff() {
                writeln!(out, "{line}")?;
            }
        }
    }
    writeln!(out, "{passed} passed, {failed} failed")?;
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
/// as `serve` (recorded by a temporary transcript), and compares each with its record.
fn run_replay_live(
    global: &GlobalArgs,
    path: &Path,
    ignore_content: bool,
) -> anyhow::Result<ExitCode> {
    use mcp_envelope::drift::{self, DriftOptions, Verdict};
    let config = load_config(global)?;
    let t = transcript::read_transcript(path).map_err(usage)?;
    if let Some(w) = &t.broken_last_line {
        eprintln!("warning: {w}");
    }
    let scratch =
        std::env::temp_dir().join(format!("mcp-envelope-live-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&scratch);
    let rt = runtime()?;
    let replayable: Vec<&transcript::CallRecord> = t
        .records
        .iter()
        .filter(|r| !drift::has_redacted(&r.arguments))
        .collect();
    let finished = rt.block_on(async {
        let writer = TranscriptWriter::start(scratch.clone(), Vec::new());
        let proxy = headless_proxy(&config, Some(writer.clone()));
        let work = async {
            proxy
                .start_servers(headless_client("mcp-envelope-replay"))
                .await;
            for (i, record) in replayable.iter().enumerate() {
                let params = json!({"name": record.tool, "arguments": record.arguments});
                let _ = proxy
                    .call_tool(&json!(i), Some(params), Arc::new(Mutex::new(None)))
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
        eprintln!("mcp-envelope replay --live: interrupted; servers stopped");
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    // Live call i answered the i-th replayable record (its JSON-RPC id was i).
    let mut live: std::collections::HashMap<String, transcript::CallRecord> = live
        .context("reading back the live calls")?
        .records
        .into_iter()
        .map(|r| (r.call_id.clone(), r))
        .collect();
    let mut next = 0usize;
    let opts = DriftOptions { ignore_content };
    let mut out = std::io::stdout().lock();
    let (mut same, mut drifted, mut skipped) = (0usize, 0usize, 0usize);
    for record in &t.records {
        let label = format!(
            "{} {} (call_id={})",
            record.tool, record.arguments, record.call_id
        );
        let verdict = if drift::has_redacted(&record.arguments) {
            Verdict::Skipped("its arguments were redacted when recorded".into())
        } else {
            next += 1;
            match live.remove(&(next - 1).to_string()) {
                Some(now) => drift::compare(record, &now, &config, opts),
                None => Verdict::Skipped("the call could not be made again".into()),
            }
        };
        match verdict {
            Verdict::Same => {
                same += 1;
                writeln!(out, "same    {label}")?;
            }
            Verdict::Drift(lines) => {
                drifted += 1;
                writeln!(out, "drift   {label}")?;
                for line in lines {
                    writeln!(out, "{line}")?;
                }
            }
            Verdict::Skipped(why) => {
                skipped += 1;
                writeln!(out, "skipped {label}: {why}")?;
            }
        }
    }
    writeln!(out, "{same} passed, {drifted} failed, {skipped} skipped")?;
    Ok(if drifted == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn run_render(path: &Path, opts: trajectory::RenderOptions) -> anyhow::Result<ExitCode> {
    let t = transcript::read_transcript(path).map_err(usage)?;
    if let Some(w) = &t.broken_last_line {
        eprintln!("warning: {w}");
    }
    let text = trajectory::render(&t.records, &opts);
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("writing stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// `mcp-envelope stats`: per-tool statistics of a transcript as a table or JSON on stdout, and
/// optionally an HTML report.
fn run_stats(
    path: &Path,
    json: bool,
    html: Option<&Path>,
    tokenizer: mcp_envelope::budget::Tokenizer,
) -> anyhow::Result<ExitCode> {
    let t = transcript::read_transcript(path).map_err(usage)?;
    if let Some(w) = &t.broken_last_line {
        eprintln!("warning: {w}");
    }
    let stats = mcp_envelope::stats::compute(&t.records, tokenizer);
    if let Some(file) = html {
        let page = mcp_envelope::stats::render_html(&stats, &path.display().to_string());
        std::fs::write(file, page)
            .with_context(|| format!("writing {}", file.display()))
            .map_err(usage)?;
    }
    let text = if json {
        mcp_envelope::stats::render_json(&stats) + "\n"
    } else {
        mcp_envelope::stats::render_table(&stats)
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("writing stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// `mcp-envelope check`: start every enabled server (waiting up to each one's
/// startup_timeout_sec), print the table of states and tools, stop them (issue 7).
fn run_check(global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let config = load_config(global)?;
    let rt = runtime()?;
    let report = rt.block_on(async {
        let proxy = headless_proxy(&config, None);
        let started = tokio::select! {
            _ = proxy.start_servers(headless_client("mcp-envelope-check")) => true,
            _ = stop_signal() => false,
        };
        let mut report = started.then(|| mcp_envelope::check::report(&config, &proxy));
        if let Some(report) = report.as_mut() {
            mcp_envelope::check::add_offered(report, proxy.offered().await);
        }
        proxy.shutdown().await;
        report
    });
    let Some(report) = report else {
        rt.shutdown_timeout(std::time::Duration::from_secs(1));
        eprintln!("mcp-envelope check: interrupted; servers stopped");
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    };
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "config: {}\n", config.path.display()).context("writing stdout")?;
    stdout
        .write_all(mcp_envelope::check::render(&report).as_bytes())
        .context("writing stdout")?;
    Ok(if report.all_ready() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `mcp-envelope import FILE`: a client's MCP config (JSON, or Codex's TOML) → TOML on stdout.
fn run_import(file: &Path) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read {}", file.display()))
        .map_err(usage)?;
    let source = file.display().to_string();
    let toml = if file.extension().is_some_and(|e| e == "toml") {
        mcp_envelope::import::import_codex_config(&text, &source)
    } else {
        let doc: Value = serde_json::from_str(&mcp_envelope::import::strip_jsonc(&text))
            .with_context(|| format!("{} is not valid JSON", file.display()))
            .map_err(usage)?;
        mcp_envelope::import::import_client_config(&doc, &source)
    }
    .with_context(|| source.clone())
    .map_err(usage)?;
    std::io::stdout()
        .lock()
        .write_all(toml.as_bytes())
        .context("writing stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// `mcp-envelope config-schema`: the config's JSON Schema, pretty-printed (issue 7).
fn run_config_schema() -> anyhow::Result<ExitCode> {
    let text = serde_json::to_string_pretty(&config::json_schema())?;
    writeln!(std::io::stdout().lock(), "{text}").context("writing stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// `mcp-envelope install|uninstall CLIENT`: resolves the paths, then `install::files` does the
/// work.
fn run_install(
    global: &GlobalArgs,
    args: &mcp_envelope::cli::InstallArgs,
    install: bool,
) -> anyhow::Result<ExitCode> {
    use mcp_envelope::install::{files, Launcher};
    let env = |k: &str| std::env::var(k).ok();
    let absolute = |p: &Path| std::path::absolute(p).context("cannot resolve a path");
    let envelope_config = match &global.config {
        Some(p) => absolute(p)?,
        None => files::default_envelope_config(&env).map_err(usage)?,
    };
    let client_config = match &args.client_config {
        Some(p) => absolute(p)?,
        None => args.client.default_config_path(&env).map_err(usage)?,
    };
    let project = match &args.project {
        Some(dir) => Some(
            std::fs::canonicalize(dir)
                .with_context(|| format!("--project {}", dir.display()))
                .map_err(usage)?
                .display()
                .to_string(),
        ),
        None => None,
    };
    let target = files::Target {
        client: args.client,
        client_config,
        project,
        envelope_config,
    };
    let mut stdout = std::io::stdout().lock();
    if install {
        let program = std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .context("cannot find this program's own path")?;
        let launcher = Launcher {
            program: program.display().to_string(),
            config: target.envelope_config.display().to_string(),
        };
        files::install(&target, &launcher, args.dry_run, &mut stdout).map_err(usage)?;
    } else {
        files::uninstall(&target, args.dry_run, &mut stdout).map_err(usage)?;
    }
    Ok(ExitCode::SUCCESS)
}
