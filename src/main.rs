//! The `mcp-envelope` binary: parses the command line, runs the library, maps errors to exit codes.

use std::io::{Read, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use mcp_envelope::cli::{Cli, Command};
use mcp_envelope::envelope::{summarize_tool_result, ToolResult};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Envelope { budget } => match run_envelope(budget) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("mcp-envelope envelope: {err:#}");
                ExitCode::from(2)
            }
        },
    }
}

/// `mcp-envelope envelope --budget N`: stdin JSON result → stdout envelope line.
fn run_envelope(budget: usize) -> anyhow::Result<()> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("reading stdin")?;
    let value: serde_json::Value =
        serde_json::from_str(&input).context("stdin is not valid JSON")?;
    let result = ToolResult::from_json(&value).context("invalid tool result")?;
    let envelope = summarize_tool_result(&result, budget);
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", envelope.to_json()).context("writing stdout")?;
    Ok(())
}
