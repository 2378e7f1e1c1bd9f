//! envelope-core: the pure core of mcp-envelope. Everything here is a function of its inputs:
//! no async runtime, no files, no processes, no sockets (the compiler keeps it so: this crate
//! depends on serde, serde_json and a tokenizer only).
//!
//! Units used throughout: "characters" are Unicode scalar values (Rust `char`s, what Python's
//! `len` counts); "tokens" always name their tokenizer ([`budget::Tokenizer`]).
//!
//! # Module map
//! | module | what it owns |
//! |---|---|
//! | [`budget`] | budgets in characters or tokens ([`budget::Measure`], [`budget::Budget`]), the exact meter the greedy fill uses, `long_rows` / `text_rows` |
//! | [`catalog`] | the merged tool list: exposed names, prefixes, collisions, `outputSchema` rewrite, allow/deny, the route table |
//! | [`drift`] | `replay --live`: a recorded call against the same call made again (status, error type, rows, content diff) |
//! | [`envelope`] | the six-key envelope and the seed's `summarize_tool_result`: rows, rendering, greedy fill |
//! | [`message_cut`] | the one truncation rule and its one marker `… [N characters cut]`: error messages cut to a character or token budget |
//! | [`mapping`] | a downstream outcome → rows ([`mapping::rows`]) or a typed error ([`mapping::errors`]) → the envelope → the `CallToolResult` view; media blocks ([`mapping::media`]), the lazy large-result path, results that are not plain tool results ([`mapping::nested`]) |
//! | [`record`] | the transcript record of one `tools/call` and of a tool list, RFC 3339 times, argument redaction by key |
//! | [`replay`] | a record's envelope recomputed from its raw outcome (recorded or current settings) and compared |
//! | [`small_map`] | member lookups in small JSON objects without hashing the name (the same answers as the map's own methods) |
//! | [`settings`] | a tool's resolved settings ([`settings::ToolSettings`]: each value and the config level it came from), the budget keys per level and their resolution, a tool's [`budget::Budget`] and [`mapping::MappingContext`], the budget settings a transcript record keeps |
//! | [`stats`] | per tool over transcript records: calls, errors, truncation, sizes raw against envelope in characters and tokens, durations, suggested budgets; rendered as a table, JSON or HTML |
//! | [`text_rows`] | plain text → line or block rows; rows longer than the budget cut into pieces |
//! | [`exposed_names`] | the names given to tools, kept for the session |
//! | [`era`] | what differs between the protocol eras: a request's era and its 2026-07-28 `_meta`, the stamps a modern result needs, versions and error codes |
//! | [`numbers`] | numbers kept as written (serde_json's `arbitrary_precision`) and the one trap that feature sets for a map visitor |
//! | [`mrtr`] | multi-round-trip requests across eras: which client capability an input request needs, `requestState` keys, `InputRequiredResult` and retry params |
//! | [`trajectory`] | transcript records → the numbered lines a summarizer reads, within a group-atomic budget |
//! | [`server_tool`] | one tool as its server listed it: its JSON text, the members read, the client's tool spliced from it |
//! | [`tool_validation`] | which tool definitions a server may offer: names, `inputSchema`, limits |
#![warn(missing_docs)]

pub mod budget;
pub mod catalog;
pub mod drift;
pub mod envelope;
pub mod era;
pub mod exposed_names;
pub mod mapping;
pub mod message_cut;
pub mod mrtr;
pub mod numbers;
pub mod record;
pub mod replay;
pub mod server_tool;
pub mod settings;
pub mod small_map;
pub mod stats;
pub mod text_rows;
pub mod tool_validation;
pub mod trajectory;
