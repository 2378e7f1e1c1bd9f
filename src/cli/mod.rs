//! The command line: clap definitions ([`Cli`] and its parts, in `args.rs`) and the
//! subcommands, one file per group: `serve.rs`; `call.rs` (`call`, `envelope`); `check.rs`;
//! `transcripts.rs` (`replay`, `render`, `stats`); `setup.rs` (`import`, `install`,
//! `uninstall`, `config-schema`). `common.rs` has what they share, `logging.rs` the log set-up.
//!
//! Exit codes (all subcommands): 0 success; 1 the command ran but found a failure; 2 bad usage,
//! a config error or unreadable input ([`exit_code`]).

use std::process::ExitCode;

mod args;
mod call;
mod check;
mod common;
mod logging;
mod serve;
mod setup;
mod transcripts;

pub use args::*;
pub use logging::{init_logging, LogGuard};

use common::usage;

/// The exit code for an error a subcommand returned: 2 for a usage, config or input error,
/// else 1.
pub fn exit_code(err: &anyhow::Error) -> ExitCode {
    if err.downcast_ref::<common::UsageError>().is_some() {
        ExitCode::from(2)
    } else {
        ExitCode::from(1)
    }
}

/// Whether `err` comes from writing to a pipe whose reader has gone (EPIPE; Rust ignores
/// SIGPIPE, so a command piped into `head` sees the write fail). The binary then exits 0
/// without a message, as the reader stopped reading on purpose.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The subcommand's name as typed (`serve` when none is given), for error messages.
pub fn subcommand_name(command: Option<&Command>) -> &'static str {
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

/// Runs the subcommand of `cli` (`serve` when none is given): its exit code, or an error to
/// print (see [`exit_code`]).
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        None => serve::run_serve(&cli.global, None, None),
        Some(Command::Serve {
            transcript,
            cassette,
            cassette_mode,
            cassette_ignore,
            http,
        }) => {
            if let Some(serving) = http.resolve().map_err(|e| usage(anyhow::anyhow!(e)))? {
                if cassette.is_some() {
                    anyhow::bail!(usage(anyhow::anyhow!(
                        "--cassette cannot be used with --http"
                    )));
                }
                return serve::run_serve_http(&cli.global, transcript, serving);
            }
            let cassette = cassette.map(|path| (path, cassette_mode, cassette_ignore));
            serve::run_serve(&cli.global, transcript, cassette)
        }
        Some(Command::Call {
            tool,
            args_json,
            transcript,
        }) => call::run_call(&cli.global, &tool, args_json.as_deref(), transcript),
        Some(Command::Envelope { budget }) => call::run_envelope(budget),
        Some(Command::Replay {
            transcript,
            live: true,
            ignore_content,
            ..
        }) => transcripts::run_replay_live(&cli.global, &transcript, ignore_content),
        Some(Command::Replay {
            transcript, update, ..
        }) => transcripts::run_replay(&cli.global, &transcript, update),
        Some(Command::Render {
            transcript,
            budget,
            budget_unit,
            tokenizer,
        }) => {
            let tokens = (budget_unit == BudgetUnit::Tokens).then_some(tokenizer);
            transcripts::run_render(
                &transcript,
                crate::trajectory::RenderOptions { budget, tokens },
            )
        }
        Some(Command::Stats {
            transcript,
            json,
            html,
            tokenizer,
        }) => transcripts::run_stats(&transcript, json, html.as_deref(), tokenizer),
        Some(Command::Check) => check::run_check(&cli.global),
        Some(Command::Import { file }) => setup::run_import(&file),
        Some(Command::ConfigSchema) => setup::run_config_schema(),
        Some(Command::Install(args)) => setup::run_install(&cli.global, &args, true),
        Some(Command::Uninstall(args)) => setup::run_install(&cli.global, &args, false),
    }
}
