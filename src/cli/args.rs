//! Command-line interface: clap definitions only, no behaviour (the subcommands run in the
//! sibling modules).
//!
//! Exit codes (all subcommands): 0 success; 1 the command ran but found a failure (an error
//! envelope from `call`, a changed envelope in `replay`, a server not ready or a config tool
//! name its server does not offer in `check`); 2 bad usage, a config error or unreadable input;
//! 130 `call` or `check` stopped by SIGINT or SIGTERM.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::budget::Tokenizer;

/// An MCP stdio proxy that rewrites every tool result into a six-key envelope
/// (call_id, tool, status, content, omitted, retryable) within a per-tool budget of characters
/// (and, when configured, tokens).
///
/// With no subcommand it runs `serve`, so agent clients can start it as
/// `mcp-envelope --config PATH`.
#[derive(Debug, Parser)]
#[command(
    name = "mcp-envelope",
    version,
    about,
    after_help = "Examples:\n  mcp-envelope --config ~/.config/mcp-envelope/config.toml\n  mcp-envelope call --config config/example.toml get_current_time '{\"timezone\":\"Europe/Warsaw\"}'\n\nExit codes: 0 success, 1 failure found (error envelope, changed replay, server not ready or tool name not offered in check), 2 usage, config or input error, 130 call or check stopped by SIGINT/SIGTERM."
)]
pub struct Cli {
    /// Options shared by every subcommand.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The subcommand to run (default: `serve`).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options shared by every subcommand.
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// The TOML config file. Else `MCP_ENVELOPE_CONFIG`, else `./mcp-envelope.toml`, else
    /// `$XDG_CONFIG_HOME/mcp-envelope/config.toml` (`~/.config/...`).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Log level on stderr (or the log file): error, warn, info, debug, trace. Default: info for
    /// `serve` and the transcript commands, warn for `call`, `install` and `uninstall`, error
    /// for `check` (its table shows the warnings). `RUST_LOG` overrides it with a full filter.
    #[arg(long, global = true, value_enum)]
    pub log_level: Option<LogLevel>,
    /// Write logs to this file (appended) instead of stderr, for clients that hide stderr.
    #[arg(long, global = true, value_name = "PATH")]
    pub log_file: Option<PathBuf>,
}

/// How `serve --cassette` answers a call the cassette has no recorded answer for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum CassetteMode {
    /// No server is started; such a call gets a `not_found` error envelope.
    #[default]
    Strict,
    /// The servers are started; such a call is forwarded and appended to the cassette.
    RecordMissing,
}

/// Log levels for `--log-level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Warnings and errors.
    Warn,
    /// One line per call, server state changes, warnings (the default).
    #[default]
    Info,
    /// Protocol details, server stderr lines.
    Debug,
    /// Everything.
    Trace,
}

impl LogLevel {
    /// The `tracing` filter directive.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Speak MCP on stdin/stdout: start the configured servers, offer their tools, envelope every
    /// result (the default).
    ///
    /// Example: mcp-envelope serve --config config/example.toml
    #[command(
        after_help = "Exit codes: 0 stopped normally (stdin closed or a signal), 2 config error, a transcript it cannot record to, or (--http) an address it cannot listen on."
    )]
    Serve {
        /// Append one JSON line per tools/call to this transcript (overrides `[transcript] path`).
        #[arg(long, value_name = "PATH")]
        transcript: Option<PathBuf>,
        /// Serve this recorded transcript instead of the servers: its tools, and each
        /// tools/call answered with the recorded outcome of the same call (tool and arguments),
        /// mapped with the budgets of `--config` when given, else with the settings recorded
        /// with that tool's last call (`char_budget`, `token_budget`, `text_rows`, ...), as
        /// `replay` does.
        #[arg(long, value_name = "TRANSCRIPT")]
        cassette: Option<PathBuf>,
        /// `strict`: start no server; a call with no recorded answer gets a `not_found` error
        /// envelope naming the closest recorded call. `record-missing`: start the servers and
        /// forward such calls to them, appending them to the cassette.
        #[arg(long, value_enum, default_value_t = CassetteMode::Strict, requires = "cassette")]
        cassette_mode: CassetteMode,
        /// An argument key (at any depth) left out when matching calls to the cassette, such as
        /// a request id or timestamp that differs every run; repeatable.
        #[arg(long, value_name = "KEY", requires = "cassette")]
        cassette_ignore: Vec<String>,
        /// Serving over streamable HTTP instead of stdin/stdout.
        #[command(flatten)]
        http: crate::serve_http::HttpArgs,
    },
    /// Start the configured servers, make one tools/call exactly as `serve` would, print the
    /// envelope as one line of JSON, stop. Exit 0 when the envelope is not an error, 1 when it is.
    ///
    /// Example: mcp-envelope call --config config/example.toml get_current_time '{"timezone":"Europe/Warsaw"}'
    #[command(
        after_help = "Exit codes: 0 the envelope is ok or truncated, 1 it is an error, 2 usage or config error or a transcript it cannot record to, 130 stopped by SIGINT/SIGTERM."
    )]
    Call {
        /// The tool name as the client sees it (after prefixes).
        tool: String,
        /// The arguments as a JSON object (default `{}`).
        args_json: Option<String>,
        /// Append the call to this transcript (overrides `[transcript] path`).
        #[arg(long, value_name = "PATH")]
        transcript: Option<PathBuf>,
    },
    /// Read one tool result as JSON on stdin and print its envelope as one line of JSON.
    ///
    /// Input: {"call_id": "...", "tool": "...", "rows": [{...}], "error": {...}}.
    ///
    /// Example: echo '{"call_id":"t1","tool":"sql","rows":[{"b":2,"a":1}]}' | mcp-envelope envelope --budget 8
    #[command(after_help = "Exit codes: 0 printed, 2 stdin is not a valid tool result.")]
    Envelope {
        /// Maximum length of `content` in characters (Unicode scalar values). 0 is allowed here:
        /// the envelope spec defines it (ten cases of the shared vectors): a result's content
        /// is cut to nothing, an error keeps its message. (The config refuses `char_budget = 0`,
        /// which would leave every result of a tool empty.)
        #[arg(long, value_name = "N")]
        budget: usize,
    },
    /// Recompute every envelope of a transcript from its recorded raw outcome and compare.
    /// Prints `ok` / `changed` per call and `N passed, M failed`; exit 0 all match, 1 any
    /// differ, 2 unreadable input. Budgets come from `--config` when given, else the recorded ones.
    #[command(
        after_help = "Examples:\n  mcp-envelope replay calls.jsonl --config config/example.toml\n  mcp-envelope replay --live calls.jsonl --config config/example.toml\n\nExit codes: 0 every envelope matches (or --update rewrote them; with --live: no call drifted), 1 some differ, 2 unreadable transcript or config."
    )]
    Replay {
        /// The transcript (JSONL) to replay.
        transcript: PathBuf,
        /// Rewrite the recorded envelopes to the recomputed ones (golden-file workflow).
        #[arg(long, conflicts_with = "live")]
        update: bool,
        /// Make every recorded call again against the real servers of `--config` and report
        /// drift per call (status, error type, row count, content diff); exit 1 on drift.
        #[arg(long)]
        live: bool,
        /// With `--live`: compare status, error type and row count only, not the content text
        /// (for tools whose answers change with time).
        #[arg(long, requires = "live")]
        ignore_content: bool,
    },
    /// Validate the config, start every enabled server, list its tools, stop them and print a
    /// table: each server's state (ready, or failed with the reason and the last lines of its
    /// stderr) and startup time, then each tool by the name the client sees with its effective
    /// char_budget, token_budget (with its tokenizer) and timeout and where each came from
    /// (tool, server, defaults, built-in). Exit 0 every enabled server is ready, 1 one is not or the config
    /// names a tool its server does not offer, 2 config error, 130 stopped by a signal.
    #[command(
        after_help = "Example:\n  mcp-envelope check --config config/example.toml\n\nExit codes: 0 every enabled server ready, 1 a server not ready or a tool name in the config (enabled_tools, disabled_tools, tools.NAME) that its server does not offer, 2 config error, 130 stopped by SIGINT/SIGTERM."
    )]
    Check,
    /// Convert an agent client's MCP config into mcp-envelope TOML on stdout: `mcpServers`
    /// (Claude Desktop, Cursor, Claude Code's `.mcp.json` and `~/.claude.json` with its
    /// per-project servers, Gemini CLI's `settings.json`), `servers` (VS Code's `mcp.json`),
    /// or Codex's `config.toml` (a `.toml` file). Remote (url/sse/http) entries become remote
    /// tables; secrets written in them move to environment variables named in a comment. Exit 2
    /// for an unreadable file, invalid JSON or TOML.
    #[command(
        after_help = "Example:\n  mcp-envelope import ~/.codex/config.toml > codex-servers.toml\n  mcp-envelope install cursor          # moves the servers and registers the proxy in one step\n\nExit codes: 0 converted, 2 unreadable file, invalid JSON/TOML or wrong shape."
    )]
    Import {
        /// The client's config file (JSON; TOML when it ends in `.toml`).
        file: PathBuf,
    },
    /// Move a client's stdio MCP servers into mcp-envelope's config (`--config`, default
    /// ~/.config/mcp-envelope/config.toml, created when missing, merged when present) and put
    /// one entry named `mcp-envelope` that starts this binary in their place. A backup of the
    /// client's file is written first; running it again changes nothing; remote (url) servers
    /// stay in the client. JSON files with comments are refused (rewriting would drop them).
    #[command(
        after_help = "Examples:\n  mcp-envelope install codex --dry-run\n  mcp-envelope install claude-code --project ~/src/app\n  mcp-envelope install vscode --client-config .vscode/mcp.json\n\nExit codes: 0 installed (or nothing to change), 2 unreadable or invalid file."
    )]
    Install(InstallArgs),
    /// Undo `install`: the client's config is restored (byte for byte from the backup when it
    /// was not changed since), and the servers install added are removed from mcp-envelope's
    /// config unless another client's install still uses them.
    #[command(
        after_help = "Example:\n  mcp-envelope uninstall codex\n\nExit codes: 0 restored, 2 no install recorded, unreadable or invalid file."
    )]
    Uninstall(InstallArgs),
    /// Print the JSON Schema (draft 7) of the config file, for editors (Taplo / Even Better
    /// TOML: put `#:schema ./mcp-envelope.schema.json` on the first line of the config).
    #[command(
        after_help = "Example:\n  mcp-envelope config-schema > ~/.config/mcp-envelope/mcp-envelope.schema.json\n\nExit codes: 0 printed."
    )]
    ConfigSchema,
    /// Print a transcript as the numbered tool trajectory a summarizer reads.
    #[command(
        after_help = "Examples:\n  mcp-envelope render calls.jsonl --budget 4000\n  mcp-envelope render calls.jsonl --budget 1000 --budget-unit tokens\n\nExit codes: 0 printed, 2 unreadable transcript."
    )]
    Render {
        /// The transcript (JSONL) to render.
        transcript: PathBuf,
        /// Keep whole calls, oldest first, within this many characters (newlines included),
        /// or tokens with `--budget-unit tokens`; at least 1. The line counting the calls left
        /// out counts too. A first call too long for it is shortened (each line cut after its
        /// label), not left out.
        #[arg(long, value_name = "N", value_parser = parse_budget)]
        budget: Option<usize>,
        /// What `--budget` counts: `chars` (Unicode scalar values) or `tokens`.
        #[arg(long, value_enum, default_value_t = BudgetUnit::Chars, requires = "budget")]
        budget_unit: BudgetUnit,
        /// The tokenizer `--budget-unit tokens` counts with: `o200k_base` or `cl100k_base`.
        #[arg(long, value_name = "NAME", default_value = "o200k_base", value_parser = parse_tokenizer)]
        tokenizer: Tokenizer,
    },
    /// Per tool over a transcript: calls, errors by type, how often truncated, raw result size
    /// against envelope size in characters and tokens (what the envelope saved), p50/p95 duration, and a
    /// suggested char_budget and token_budget (the smallest that would have kept 90% of the tool's successful
    /// results whole). A table on stdout; `--json` for machines; `--html FILE` also writes a
    /// report with a chart.
    ///
    /// Example: mcp-envelope stats calls.jsonl --html stats.html
    #[command(after_help = "Exit codes: 0 printed, 2 unreadable transcript or report file.")]
    Stats {
        /// The transcript (JSONL) to summarize.
        transcript: PathBuf,
        /// Print one JSON document instead of the table.
        #[arg(long)]
        json: bool,
        /// Also write a self-contained HTML report (chart and table) to this file.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// The tokenizer token counts are in: o200k_base (default) or cl100k_base.
        #[arg(long, value_name = "NAME", default_value = "o200k_base", value_parser = parse_tokenizer)]
        tokenizer: Tokenizer,
    },
}

/// Arguments of `install` and `uninstall`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The client: claude-code, claude-desktop, codex, cursor, vscode, gemini.
    #[arg(value_enum)]
    pub client: crate::install::Client,
    /// The client's config file, instead of its usual place (e.g. a project's `.mcp.json`,
    /// `.vscode/mcp.json`, `.gemini/settings.json`).
    #[arg(long, value_name = "PATH")]
    pub client_config: Option<PathBuf>,
    /// Claude Code: move the local-scope servers of this project directory
    /// (`projects.<DIR>.mcpServers` in ~/.claude.json) instead of the user-scope ones.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Print the diffs of both files and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// The unit of `render --budget`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BudgetUnit {
    /// Unicode scalar values.
    Chars,
    /// Tokens of `--tokenizer`.
    Tokens,
}

/// A `render --budget` value: a whole number of at least 1, the same rule as the config's
/// `char_budget` and `token_budget` (a zero budget is a config error there, and a usage error,
/// exit 2, here: no call fits in nothing).
fn parse_budget(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err(
            "a budget is a whole number of at least 1 (as char_budget and \
                       token_budget in the config); 0 leaves no room for any content"
                .to_string(),
        ),
        Ok(n) => Ok(n),
        Err(err) => Err(format!("not a whole number of at least 1 ({err})")),
    }
}

fn parse_tokenizer(name: &str) -> Result<Tokenizer, String> {
    Tokenizer::parse(name).ok_or_else(|| {
        format!("unknown tokenizer `{name}`; expected `o200k_base` or `cl100k_base`")
    })
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// `mcp-envelope [SUBCOMMAND] --help` as printed.
    fn help(subcommand: Option<&str>) -> String {
        let mut cli = Cli::command();
        let cmd = match subcommand {
            Some(name) => cli.find_subcommand_mut(name).unwrap(),
            None => &mut cli,
        };
        cmd.render_long_help().to_string()
    }

    #[test]
    fn help_texts_name_every_exit_code_and_budget_kind() {
        let top = help(None);
        assert!(top.contains("tokens") && top.contains("130"), "{top}");
        let check = help(Some("check"));
        for part in [
            "0 every enabled server ready",
            "1 a server not ready or a tool name in the config",
            "2 config error",
            "130 stopped by SIGINT/SIGTERM",
            "token_budget",
        ] {
            assert!(check.contains(part), "{part}: {check}");
        }
        assert!(help(Some("call")).contains("130 stopped by SIGINT/SIGTERM"));
    }

    #[test]
    fn each_example_is_on_its_own_line() {
        for (sub, examples) in [
            (
                "replay",
                ["replay calls.jsonl", "replay --live calls.jsonl"],
            ),
            (
                "render",
                ["--budget 4000", "--budget 1000 --budget-unit tokens"],
            ),
        ] {
            let text = help(Some(sub));
            for example in examples {
                let line = text.lines().find(|l| l.contains(example)).unwrap();
                assert_eq!(line.matches("mcp-envelope").count(), 1, "{sub}: {line}");
            }
        }
    }
}
