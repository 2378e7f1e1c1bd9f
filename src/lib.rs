//! mcp-envelope: an MCP stdio proxy that rewrites every tool result into a fixed six-key
//! envelope within a per-tool character budget.
//!
//! # Module map
//! | module | what it owns | I/O? |
//! |---|---|---|
//! | [`budget`] (core) | budgets in characters or tokens ([`budget::Measure`], [`budget::Budget`]), the exact meter the greedy fill uses, `long_rows` / `text_rows` | no |
//! | [`backpressure`] (in [`transport`]) | bytes queued for a client that does not read: reading paused above a mark | counts writes |
//! | [`envelope`] (core) | the seed's `summarize_tool_result`: rows, rendering, greedy fill, lengths in Unicode scalar values | no |
//! | [`message_cut`] (core) | error messages cut to a character or token budget with one marker | no |
//! | [`fast_hash`] | the hash maps of the per-call tables (foldhash instead of SipHash) | no |
//! | [`runtime`] | CPU-heavy parsing of very large messages moved to the blocking pool; memory given back after large messages (`malloc_trim`) | runs work elsewhere |
//! | [`outcome`] (core: `envelope_core::mapping`) | a downstream outcome (CallToolResult, JSON-RPC error, timeout, crash) → rows or error → envelope → the CallToolResult we answer with | no |
//! | [`wire`] | JSON-RPC 2.0 messages and error codes ([`wire::jsonrpc`]), line framing with a maximum length ([`wire::codec`]: a long line read straight into the buffer it is handed over in), a response's head without its body, `tools/call` arguments kept as written, what can be read of a line that is not JSON | the line reader reads any `AsyncRead` |
//! | [`exposed_names`] (core) | the names given to tools, kept for the session | no |
//! | [`paging`] | the bounded store of truncated results (LRU, time-to-live, per session) | no |
//! | [`page_tool`] | the page tool: its definition, arguments, the next page of a kept result | no |
//! | [`config`] | the TOML config: raw form (`raw.rs`) → checks (`validate.rs`) → validated form and setting resolution tool → server → defaults → built-in (`model.rs`); reading, `${VAR}` expansion, config-file discovery (`load.rs`) | only `Config::load` reads the file |
//! | [`availability`] | servers that are down, named in `initialize`'s instructions and sent as a `notifications/message` warning | no |
//! | [`settings`] (core; tests through the config parser here) | `token_budget`, `tokenizer`, `long_rows`, `text_rows` per level, resolved; a tool's Budget and mapping context | no |
//! | [`catalog`] (core) | the merged tool list: names, prefixes, collisions, `outputSchema` rewrite, route table | no |
//! | [`rpc`] | one JSON-RPC peer: ids, pending requests, timeouts, cancellation, dispatch of what the other side sends; results kept unparsed when large | yes |
//! | [`passthrough`] | resources, prompts, completion, logging: declared capabilities, merged lists, routing by URI / name / ref; tool results that are not plain results, envelopes behind an envelope | requests to servers (the routing rules are pure) |
//! | [`era`] (core) | what differs between the protocol eras: a request's era and its 2026-07-28 `_meta`, the stamps a modern result needs, versions and error codes | no |
//! | [`modern`] | the upstream side of MCP 2026-07-28: `server/discover`, `subscriptions/listen` streams, which notifications reach a modern client | no |
//! | [`mrtr`] | multi-round-trip requests across eras: which client capability an input request needs, our `requestState` keys, `InputRequiredResult` and retry params | draws random `requestState` keys; the rules are in the core |
//! | [`downstream`] | one supervised task per server over any transport: start, handshake (era probe: `server/discover`, else `initialize`), restarts, shutdown | yes |
//! | [`proxy`] | the shared core (servers, catalog, routing, the `tools/call` path, paging store) and one session per client (dispatch, era, in-flight ids, cancellation, server-to-client requests); [`proxy::serve`] runs them over stdin/stdout | yes |
//! | [`transport`] | how lines travel: our own stdin/stdout (reactor-driven when pipes), a server's child process and pipes, a remote server over HTTP | yes |
//! | [`serve_http`] | `serve --http`: the proxy over streamable HTTP at `/mcp`, both eras (legacy sessions with `Mcp-Session-Id`, stateless 2026-07-28), bind/Origin/token guards, body limit, draining shutdown | yes |
//! | [`reload`] | hot reload of the config while serving (file looked at every second, SIGHUP): what a new config changes about the servers (pure), the watcher | yes |
//! | [`redact`] | secrets out of text and arguments: secret-looking keys, a server's environment values | no |
//! | [`tool_validation`] (core) | which tool definitions a server may offer: names, `inputSchema`, limits | no |
//! | [`text_rows`] (core) | plain text → line or block rows; rows longer than the budget cut into pieces | no |
//! | [`private_file`] | opening a transcript or log file for appending: no symlink, no FIFO, mode 0600 | opens files |
//! | [`transcript`] | the writer thread and the file; reading; replay over a config (the record type and the replay comparison are the core's `record` and `replay`) | file I/O at the edge |
//! | [`stats`] (core) | per tool over a transcript: calls, errors, truncation, sizes saved in characters and tokens, durations, suggested budgets; table, JSON, HTML | no |
//! | [`drift`] (core; [`drift::compare`] over a config here) | `replay --live`: a recorded call against the same call made again | no |
//! | [`trajectory`] (core) | transcript → numbered summary lines with a group-atomic budget | no |
//! | [`check`] | `check`: snapshot of started servers → report → the printed table | no |
//! | [`import`] | `import`: a client's MCP config (JSON, or Codex's TOML) → mcp-envelope TOML | no |
//! | [`install`] | `install` / `uninstall`: move a client's servers behind the proxy and back; planning is pure, [`install::files`] reads and writes | files |
//! | [`cli`] | the command line: clap definitions of every subcommand and flag, and each subcommand's run (one file per group) | yes |
//!
//! Modules marked (core) live in the pure crate `envelope_core` (`crates/envelope-core`, no
//! tokio, no I/O) and are re-exported here under their old paths.
//!
//! The old paths `jsonrpc`, `recover`, `exact_args` (now in [`wire`]) are re-exported.
//!
//! # Public API
//! Small on purpose: [`cli::run`] (the binary), [`config`] (load and validate a config),
//! [`paging`] (the bounded store), [`wire`] (JSON-RPC framing and types) and the core
//! crate's pure modules. Every other module is `pub(crate)`: the integration tests drive the
//! binary, and in-process tests live beside the code.
//!
//! # Stages of one `tools/call` response, one name each
//! 1. [`transport::Delivery`]: what a transport delivered, a message (a line, a JSON body, an
//!    SSE event's data) or a fault for one request.
//! 2. [`rpc::Reply`]: what settles one pending request at the peer: the JSON-RPC response
//!    (its `result` as an [`rpc::ResultBody`], parsed or still the raw line, or its error
//!    object), or why none came.
//! 3. [`outcome::Outcome`]: what the call came to (a `CallToolResult`, a JSON-RPC error, a
//!    timeout, a crash...), the mapping's input; the call path holds it as a
//!    `proxy::calls::CallOutcome` while a large result is still raw.
//! 4. [`outcome::Mapped`]: the envelope and the media blocks passed through.
//! 5. `proxy::requests::Answer`: the JSON text of the response to the client, with its id.
//!
//! The binary (`src/main.rs`) parses the command line, sets up logging to stderr, calls
//! [`cli::run`] and maps errors to exit codes; everything else lives here.
#![warn(missing_docs)]

// The pure modules live in the core crate (`crates/envelope-core`); re-exported under their old
// paths so `crate::budget::Budget` and `mcp_envelope::envelope::Envelope` keep working.
pub use envelope_core::mapping as outcome;
pub use envelope_core::{
    budget, catalog, envelope, era, exposed_names, message_cut, server_tool, small_map, stats,
    text_rows, tool_validation, trajectory,
};

pub(crate) mod availability;
pub(crate) mod cassette;
pub(crate) mod check;
pub mod cli;
pub mod config;
pub(crate) mod downstream;
pub(crate) mod drift;
pub(crate) mod fast_hash;
pub(crate) mod import;
pub(crate) mod install;
pub(crate) mod modern;
pub(crate) mod mrtr;
pub(crate) mod page_tool;
pub mod paging;
pub(crate) mod passthrough;
pub(crate) mod private_file;
pub(crate) mod proxy;
pub(crate) mod redact;
pub(crate) mod reload;
pub(crate) mod rpc;
pub(crate) mod runtime;
pub(crate) mod serve_http;
pub(crate) mod settings;
pub(crate) mod transcript;
pub(crate) mod transport;
pub mod wire;

// The old flat paths of the wire, transport and runtime modules.
pub(crate) use runtime as offload;
pub(crate) use transport::{backpressure, stdio};
pub use wire::{exact_args, jsonrpc, recover};
