//! mcp-envelope: an MCP stdio proxy that rewrites every tool result into a fixed six-key
//! envelope within a per-tool character budget.
//!
//! # Module map
//! | module | what it owns | I/O? |
//! |---|---|---|
//! | [`envelope`] | the seed's `summarize_tool_result`: rows, rendering, greedy fill, lengths in Unicode scalar values | no |
//! | [`outcome`] | what a downstream `tools/call` produced (`Outcome`) and its mapping to an envelope and the answering `CallToolResult` (issue 3) | no |
//! | [`cli`] | clap definitions of every subcommand and flag | no |
//!
//! The binary (`src/main.rs`) parses the command line, sets up logging to stderr and maps errors
//! to exit codes; everything else lives here.
#![warn(missing_docs)]

pub mod cli;
pub mod envelope;
pub mod outcome;
