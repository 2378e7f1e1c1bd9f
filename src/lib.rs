//! mcp-envelope: an MCP stdio proxy that rewrites every tool result into a fixed six-key
//! envelope within a per-tool character budget.
//!
//! # Module map
//! | module | what it owns | I/O? |
//! |---|---|---|
//! | [`envelope`] | the seed's `summarize_tool_result`: rows, rendering, greedy fill, lengths in Unicode scalar values | no |
//! | [`cli`] | clap definitions of every subcommand and flag | no |
//! | [`config`] | the TOML config: raw → validated form, `${VAR}` expansion, setting resolution tool → server → defaults → built-in, config-file discovery | only `Config::load` reads the file |
//!
//! The binary (`src/main.rs`) parses the command line, sets up logging to stderr and maps errors
//! to exit codes; everything else lives here.
#![warn(missing_docs)]

pub mod cli;
pub mod config;
pub mod envelope;
