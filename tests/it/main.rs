//! The integration tests: one test binary, a module per behaviour. Each module drives the real
//! `mcp-envelope` binary (or the library) the way its doc comment says; `common` holds the
//! shared helpers (pinned real servers, temporary configs, a raw JSON-RPC client over stdio,
//! the Python SDK driver) and `common::faults` the reliability helpers. Fixtures, clients,
//! golden transcripts and vectors live beside this folder in `tests/`.

mod common;

mod availability;
mod bad_input;
mod check;
mod config_schema;
mod e2e_fixture;
mod e2e_real;
mod e2e_smoke;
mod ecosystem;
mod envelope_cli;
mod envelope_props;
mod eras;
mod eras_mrtr;
mod eras_sdk;
mod fuzz_pure;
mod git_log_rows;
mod http_batch;
mod http_serve;
mod import;
mod install;
mod install_deps;
mod modern_only;
mod names;
mod output_schema;
mod paging;
mod passthrough;
mod real_clients;
mod redaction;
mod reliability_faults;
mod reliability_load;
mod reliability_servers;
mod reload;
mod remote;
mod stdio;
mod tokens;
mod transcripts;
mod transcripts_open;
mod transcripts_paging;
mod transcripts_rounds;
mod transcripts_tools;
mod transcripts_unanswered;
mod vectors;
