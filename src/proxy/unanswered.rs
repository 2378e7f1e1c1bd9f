//! A `tools/call` until it is answered ([`OpenCall`]): when its task ends first (the client
//! cancelled the request: `notifications/cancelled`, MCP 2025-11-25 "Utilities:
//! Cancellation", in either era; a 2026-07-28 client of `serve --http` closing the response
//! stream, which the session takes as that notification), the transcript still gets the call's
//! record, with the outcome `{"kind":"cancelled"}`, the events it had so far (progress,
//! server requests) and its duration up to the cancellation. Without a transcript it
//! costs nothing but moving the call's own values into it.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde_json::{Map, Value};

use super::call_params::Malformed;
use super::calls::{CallFacts, Finished};
use super::calls_in_flight::CallGuard;
use super::Core;
use crate::config::ToolSettings;
use crate::outcome::{map_outcome, Outcome};
use crate::small_map;

/// A call's own values from its start until it is answered, owned here so that a call whose
/// task is dropped (cancelled) can still be recorded by [`Drop`].
pub(super) struct OpenCall<'a> {
    core: &'a Core,
    /// The call's key (its start order): its entry among the calls in flight.
    pub key: u64,
    /// The envelope's `call_id` (the client's id as a string).
    pub call_id: String,
    /// The tool name the client used.
    pub name: String,
    /// The call's params (`arguments`, and `name` once routed: the server's own name).
    pub params: Map<String, Value>,
    /// When the call started by the wall clock, when a transcript records it.
    pub started_at: Option<SystemTime>,
    /// When the call started.
    pub started: Instant,
    /// The call's entry among the calls in flight, once routed to a server.
    pub in_flight: Option<CallGuard>,
    /// The server, its name of the tool and the tool's settings, once routed (kept only when
    /// recording).
    route: Option<(String, String, ToolSettings)>,
    answered: bool,
}

impl<'a> OpenCall<'a> {
    /// The call `key` as it starts.
    pub(super) fn new(
        core: &'a Core,
        key: u64,
        call_id: String,
        name: String,
        params: Map<String, Value>,
    ) -> OpenCall<'a> {
        OpenCall {
            core,
            key,
            call_id,
            name,
            params,
            started_at: core.transcript.as_ref().map(|_| SystemTime::now()),
            started: Instant::now(),
            in_flight: None,
            route: None,
            answered: false,
        }
    }

    /// Notes where the call went, for its record should it be cancelled.
    pub(super) fn routed(&mut self, server: &str, server_tool: &str, settings: ToolSettings) {
        if self.core.transcript.is_some() {
            self.route = Some((server.to_owned(), server_tool.to_owned(), settings));
        }
    }

    /// The call is answered (or refused): nothing to record when it is dropped. Its entry
    /// among the calls in flight stays until then (its record takes its events).
    pub(super) fn answered(&mut self) {
        self.answered = true;
    }

    /// The call's arguments, taken out of its params (an empty object when it had none).
    pub(super) fn take_arguments(&mut self) -> Value {
        small_map::get_mut(&mut self.params, "arguments")
            .map_or_else(|| Value::Object(Map::new()), std::mem::take)
    }

    /// Records a call the proxy refused itself with the JSON-RPC error object `error` (a bad
    /// or unknown `requestState`, malformed params) before any server saw it: the client gets
    /// that error, not an envelope, and the transcript a record with the outcome `refused`
    /// (that error) and the arguments as the client sent them, so that it lists every call the
    /// client made and blames no server. Without a transcript it records nothing.
    pub(super) fn refused(mut self, error: &Value) {
        self.answered = true;
        if self.core.transcript.is_none() {
            return;
        }
        let mut finished = self.ended(Outcome::Refused {
            error: error.clone(),
        });
        finished.refused = true;
        self.core.record(&mut finished);
    }

    /// The record of a call that ended with `outcome` before any answer of a server (cancelled,
    /// or refused by the proxy; see the module documentation).
    fn ended(&mut self, outcome: Outcome) -> Finished {
        let (server, server_tool, settings) = self.route.take().unwrap_or_else(|| {
            // Not routed yet: the server that offers the name now (cancelled before its task
            // ran), or the one it is reserved for (waiting for its server to start).
            match self.core.catalog().route(&self.name) {
                Some(r) => {
                    let settings = self.core.tool_settings(&r.server, &r.tool);
                    (String::from(&*r.server), String::from(&*r.tool), settings)
                }
                None => self.core.reserved_for(&self.name),
            }
        });
        let facts = CallFacts {
            call_id: std::mem::take(&mut self.call_id),
            tool: std::mem::take(&mut self.name),
            server,
            server_tool,
            settings,
        };
        let mapped = map_outcome(&outcome, &facts.mapping_context());
        // Cancelled while its arguments were marked to go as the client wrote them.
        let arguments = crate::exact_args::unmarked(self.take_arguments());
        Finished {
            facts,
            key: self.key,
            started_at: self.started_at,
            duration: self.started.elapsed(),
            arguments,
            mapped,
            outcome: Some(outcome),
            payload: None,
            replayed: false,
            refused: false,
        }
    }
}

impl Drop for OpenCall<'_> {
    fn drop(&mut self) {
        if self.answered || self.core.transcript.is_none() {
            return;
        }
        let mut finished = self.ended(Outcome::Cancelled);
        // Before `in_flight` is dropped: the record takes the call's events from there.
        self.core.record(&mut finished);
    }
}

/// A request from its admission until its task first runs: owns the request's id and params,
/// and when it is dropped before [`Unstarted::start`] (the client's `notifications/cancelled`
/// came before the task ran: the task was aborted before its first poll) and the request is a
/// `tools/call` and a transcript is kept, records the call as the task would have ended it
/// but for the cancellation: as `refused` with the error the proxy would have answered when it
/// refuses such a call whatever happens (malformed params, a `_meta` of the wrong shape, a
/// call before `initialize`: [`super::call_params::call_params`] and the session's checks),
/// else as cancelled, as [`OpenCall`] does for a call cancelled later (MCP 2025-11-25
/// "Utilities: Cancellation"). Either way the call is in the transcript, as every call is.
pub(super) struct Unstarted {
    /// What its record needs when the request is a `tools/call` and the core keeps a
    /// transcript (boxed: the request's task holds this until it runs, and its future is kept
    /// small, see `answer_request` in `dispatch.rs`).
    recording: Option<Box<Recording>>,
    id: Value,
    params: Option<Option<Value>>,
    key: Option<u64>,
}

/// The core of an [`Unstarted`] `tools/call` that a transcript records, and the JSON-RPC error
/// object its session refuses it with before handling it, if any.
struct Recording {
    core: Arc<Core>,
    refusal: Option<Value>,
}

impl Unstarted {
    /// The request `id` with `params`; `key` is its start order when it is a `tools/call`.
    /// `refusal` gives the error its session refuses the request with before handling it
    /// (asked only when a `tools/call` is recorded).
    pub(super) fn new(
        core: &Arc<Core>,
        (id, method, params): (Value, &str, Option<Value>),
        key: Option<u64>,
        refusal: impl FnOnce(Option<&Value>) -> Option<Value>,
    ) -> Unstarted {
        let records = method == "tools/call" && core.transcript.is_some();
        let recording = records.then(|| {
            Box::new(Recording {
                core: core.clone(),
                refusal: refusal(params.as_ref()),
            })
        });
        Unstarted {
            recording,
            id,
            params: Some(params),
            key,
        }
    }

    /// The task runs: its id and params, taken out (nothing is recorded on drop from now on).
    pub(super) fn start(mut self) -> (Value, Option<Value>) {
        let params = self.params.take().flatten();
        (std::mem::take(&mut self.id), params)
    }
}

impl Drop for Unstarted {
    fn drop(&mut self) {
        let (Some(recording), Some(params)) = (self.recording.take(), self.params.take()) else {
            return;
        };
        let Recording { core, refusal } = *recording;
        let call_id = super::call_id_of(&self.id);
        let checked = match refusal {
            Some(error) => Err(Malformed::of(error, params)),
            None => super::call_params::call_params(params).map_err(|refusal| *refusal),
        };
        match checked {
            // Refused whatever happens: recorded as the task would have (the client, having
            // cancelled it, got no answer).
            Err(refusal) => {
                core.refuse_malformed(&self.id, self.key, refusal);
                tracing::info!(call_id = %call_id, "tools/call cancelled before it started (refused: its request was malformed)");
            }
            Ok((params, name)) => {
                let key = self.key.unwrap_or_else(|| core.next_key());
                // Dropped unanswered: records itself as cancelled.
                drop(OpenCall::new(&core, key, call_id.clone(), name, params));
                tracing::info!(call_id = %call_id, "tools/call cancelled before it started");
            }
        }
    }
}
