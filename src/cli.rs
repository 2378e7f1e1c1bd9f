//! Command-line interface: clap definitions only, no behaviour.

use clap::{Parser, Subcommand};

/// An MCP stdio proxy that envelopes every tool result.
#[derive(Debug, Parser)]
#[command(name = "mcp-envelope", version, about, long_about = None)]
pub struct Cli {
    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read one tool result as JSON on stdin and print its envelope as one line of JSON.
    ///
    /// Input: `{"call_id": "...", "tool": "...", "rows": [{...}], "error": {...}}`.
    /// Exit codes: 0 on success, 2 on bad input.
    ///
    /// Example: echo '{"call_id":"t1","tool":"sql","rows":[{"b":2,"a":1}]}' | mcp-envelope envelope --budget 8
    Envelope {
        /// Maximum length of `content` in characters (Unicode scalar values).
        #[arg(long, value_name = "N")]
        budget: usize,
    },
}
