//! One JSON-RPC 2.0 peer ([`peer::Peer`]) for either direction of a connection: it numbers our
//! requests, keeps them pending until their answer (or a timeout, or the end of the connection),
//! sends `notifications/cancelled` when it gives up on one, and dispatches what the other side
//! sends ([`peer::dispatch_line`]): answers fill their pending slot, requests and notifications
//! go to a [`peer::Handler`]. A large success response is kept unparsed ([`body::ResultBody`]).
//!
//! Sources: the JSON-RPC 2.0 specification; MCP specification 2025-06-18 "Basic" (requests,
//! ids) and "Utilities: Cancellation".

pub mod body;
#[cfg(test)]
mod gate_tests;
pub mod peer;
#[cfg(test)]
mod raw_tests;

pub use body::{RawResponse, ResultBody};
pub use peer::{CallError, Handler, Peer, Reply};
