//! The `tools/call` path, shared by every session: the params checked, the call routed by name
//! (the page tool, a cassette, or a server), forwarded, its outcome mapped to the envelope with
//! the tool's budget, recorded in the transcript, and kept for paging when truncated.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};
use tracing::info;

use super::call_params::{call_params, Malformed};
use super::multi_round::Flow;
use super::session::Session;
use super::unanswered::OpenCall;
use super::{call_id_of, Core, DownstreamSlot};
use crate::catalog::Route;
use crate::config::ToolSettings;
use crate::downstream::{CallError, RawResponse};
use crate::envelope::Status;
use crate::era::RequestMeta;
use crate::offload::OFFLOAD_MIN_BYTES;
use crate::outcome::{map_outcome, map_raw_response, Mapped, MappingContext, Outcome};
use crate::passthrough::results::is_url_elicitation_required;
use crate::redact::SecretValues;
use crate::settings::RecordedBudget;
use crate::small_map;
use crate::transcript::CallRecord;

/// One `tools/call` to make: the client's id and params, where the downstream id goes, its key
/// (start order, [`Core::next_key`]) when already assigned, the request's 2026-07-28 fields,
/// the session.
pub(super) struct CallRequest<'a> {
    pub id: &'a Value,
    pub params: Option<Value>,
    pub slot: DownstreamSlot,
    pub key: Option<u64>,
    pub modern: Option<&'a Arc<RequestMeta>>,
    pub session: Option<&'a Arc<Session>>,
}

/// A `tools/call` answer that is not an envelope: a JSON-RPC error object, or a result the
/// client gets as it is (an `InputRequiredResult`).
pub(super) enum NotEnveloped {
    Error(Value),
    Result(Value),
}

/// What came back for a call: an [`Outcome`], or a large success response still unparsed
/// (mapped by [`map_raw`]; with a transcript, recorded from its text).
pub(super) enum CallOutcome {
    Outcome(Outcome),
    /// Answered by the cassette (`serve --cassette`), with the outcome it recorded.
    Replayed(Outcome),
    Raw(RawResponse),
    /// Answered by the proxy itself (the page tool), with the outcome to record. Boxed (rare):
    /// inline, it made every call's state 176 bytes larger.
    Mapped(Box<Mapped>, Outcome),
}

/// Who answered a call: the id, the name the client used, the server, the server's own name of
/// the tool, and the tool's settings. Owns its strings, to move into work on the blocking pool.
#[derive(Clone)]
pub(super) struct CallFacts {
    pub call_id: String,
    pub tool: String,
    pub server: String,
    pub server_tool: String,
    pub settings: ToolSettings,
}

impl CallFacts {
    pub(super) fn mapping_context(&self) -> MappingContext<'_> {
        self.settings
            .mapping_context(&self.call_id, &self.tool, &self.server)
    }
}

/// The one info-level line logged per `tools/call`: no argument values.
pub(super) struct CallSummary {
    call_id: String,
    tool: String,
    server: String,
    status: Status,
    omitted: u64,
    duration: Duration,
    /// A large raw response, kept so that freeing it (unmapping tens of megabytes takes
    /// milliseconds) happens after the answer is on its way, when the summary is dropped.
    _payload: Option<RawResponse>,
}

impl CallSummary {
    /// Logs `tools/call call_id=… tool=… server=… status="…" omitted=… duration_ms=…`: the
    /// text the log's formatter wrote for these as fields, written as one message (formatting
    /// six fields through the formatter's styled field visitor cost about as much as the rest
    /// of the line). The status is written between quotes as it is (its three spellings need
    /// no escaping), not through `Debug`, which escapes a string one character at a time.
    /// The text is put together first ([`CallSummary::line`]) and handed to the formatter as one
    /// piece: formatting its eleven pieces through the log's escaping writer cost about 2,100
    /// instructions per call, most of it `core::fmt`'s work per piece (callgrind, 2026-12-02).
    pub(super) fn log(&self) {
        let line = self.line();
        info!("{line}");
    }

    /// `tools/call call_id=… tool=… server=… status="…" omitted=… duration_ms=…`.
    fn line(&self) -> String {
        let (id, tool, server) = (&self.call_id, &self.tool, &self.server);
        let mut line = String::with_capacity(96 + id.len() + tool.len() + server.len());
        for part in [
            "tools/call call_id=",
            id,
            " tool=",
            tool,
            " server=",
            server,
        ] {
            line.push_str(part);
        }
        line.push_str(" status=\"");
        line.push_str(self.status.as_str());
        line.push_str("\" omitted=");
        push_decimal(&mut line, self.omitted);
        line.push_str(" duration_ms=");
        push_decimal(&mut line, self.duration.as_millis() as u64);
        line
    }
}

/// Appends `n` in decimal, as `Display` writes it.
fn push_decimal(out: &mut String, n: u64) {
    if n >= 10 {
        push_decimal(out, n / 10);
    }
    out.push(char::from(b'0' + (n % 10) as u8));
}

/// A mapped call and what its transcript record and paging need.
pub(super) struct Finished {
    pub facts: CallFacts,
    /// The call's key among the calls in flight: its record takes its events from there.
    pub key: u64,
    /// When the call started by the wall clock: read only when a transcript records it.
    pub started_at: Option<SystemTime>,
    pub duration: Duration,
    pub arguments: Value,
    pub mapped: Mapped,
    pub outcome: Option<Outcome>,
    pub payload: Option<RawResponse>,
    /// Whether the cassette answered the call ([`CallOutcome::Replayed`]).
    pub replayed: bool,
    /// Whether the proxy refused the call itself with a JSON-RPC error
    /// ([`OpenCall::refused`]): no server's answer, never appended to a cassette.
    pub refused: bool,
}

impl Core {
    /// `tools/call` without a client (`mcp-envelope call`, `replay --live`): routes, forwards,
    /// maps the outcome to the envelope and returns our CallToolResult (and logs the call).
    /// `Err` is a JSON-RPC error object for malformed params (-32602).
    pub async fn call_tool(
        self: &Arc<Self>,
        id: &Value,
        params: Option<Value>,
        slot: DownstreamSlot,
    ) -> Result<Value, Value> {
        let call = CallRequest {
            id,
            params,
            slot,
            key: None,
            modern: None,
            session: None,
        };
        match self.call_tool_mapped(call).await {
            Ok((mapped, summary)) => {
                summary.log();
                Ok(mapped.into_call_tool_result())
            }
            Err(NotEnveloped::Error(err)) => Err(err),
            Err(NotEnveloped::Result(result)) => Ok(result),
        }
    }

    /// The next key of a `tools/call`: its start order among this proxy's `tools/call`
    /// requests, its key among the calls in flight. Not its transcript `seq`
    /// ([`crate::transcript::TranscriptWriter::record`] numbers the records).
    pub(super) fn next_key(&self) -> u64 {
        self.call_counter
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// [`Core::call_tool`] for a session, returning the mapped outcome and the call's log line,
    /// to be logged once the answer is on its way (logging is kept off the answer's path).
    /// A call whose task is dropped before it returns (the client cancelled it) is recorded
    /// as cancelled ([`OpenCall`]).
    pub(super) async fn call_tool_mapped(
        self: &Arc<Self>,
        call: CallRequest<'_>,
    ) -> Result<(Mapped, CallSummary), NotEnveloped> {
        let (params, name) = match call_params(call.params) {
            Ok(checked) => checked,
            Err(refusal) => {
                let error = self.refuse_malformed(call.id, call.key, *refusal);
                return Err(NotEnveloped::Error(error));
            }
        };
        let key = call.key.unwrap_or_else(|| self.next_key());
        let mut open = OpenCall::new(self, key, call_id_of(call.id), name, params);
        let pager = self.pager_for(call.session);
        let arguments = small_map::get(&open.params, "arguments");
        // What is known before the server is asked: a page (the page tool's answer) or an
        // unrouted name, boxed (rare) so that the state held across the awaits below stays
        // small (see `answer_request` in src/proxy/dispatch.rs).
        let target = match self.page_call(pager, &open.name, &open.call_id, arguments) {
            Some(page) => Err(Box::new(page)),
            None => match self.catalog().route(&open.name).cloned() {
                Some(route) => Ok(route),
                // Boxed (rare: a server still starting), as `call_routed` below.
                None => match Box::pin(self.route_once_started(&open.name)).await {
                    Ok(Some(route)) => Ok(route),
                    Ok(None) => Err(Box::new(self.unrouted(&open.name))),
                    Err(timeout) => Err(Box::new(self.unrouted_waited(&open.name, timeout))),
                },
            },
        };
        let leg = Leg {
            key,
            slot: &call.slot,
            modern: call.modern,
            session: call.session,
        };
        // One statement: what the server answered is a temporary, not a local whose room the
        // state keeps across the await below.
        let (facts, call_outcome) = call_facts(
            match target {
                Err(done) => *done,
                // Boxed: held inline, its state made this future 1,456 bytes, past glibc's
                // per-thread cache (dhat, 2026-12-03).
                Ok(route) => match Box::pin(self.call_routed(&route, &mut open, &leg)).await {
                    Ok(routed) => routed,
                    Err(NotEnveloped::Error(error)) => {
                        open.refused(&error);
                        return Err(NotEnveloped::Error(error));
                    }
                    Err(not_enveloped) => {
                        open.answered();
                        return Err(not_enveloped);
                    }
                },
            },
            &mut open,
        );
        let replayed = matches!(call_outcome, CallOutcome::Replayed(_));
        let (mapped, payload, outcome) = match call_outcome {
            // Boxed: see `answer_request` (src/proxy/dispatch.rs).
            CallOutcome::Raw(raw) => Box::pin(map_raw_off_thread(raw, &facts)).await,
            CallOutcome::Outcome(outcome) | CallOutcome::Replayed(outcome) => {
                let mapped = map_outcome(&outcome, &facts.mapping_context());
                (mapped, None, Some(outcome))
            }
            CallOutcome::Mapped(mapped, outcome) => (*mapped, None, Some(outcome)),
        };
        // Answered and mapped: from here on the call has its outcome.
        open.answered();
        let url_error = url_elicitation_error(outcome.as_ref());
        let finished = Finished {
            facts,
            key,
            started_at: open.started_at,
            duration: open.started.elapsed(),
            // `params` is dropped with `open`: its `arguments` taken out, not removed (no hash).
            arguments: open.take_arguments(),
            mapped,
            outcome,
            payload,
            replayed,
            refused: false,
        };
        // `open` (the call's entry among the calls in flight) lives until its record is made.
        // Recorded like any call (an `rpc_error`), but the client gets the -32042 error itself.
        unless_url_elicitation(url_error, self.finish(pager, call.id, finished))
    }

    /// Records a `tools/call` refused before it was made (malformed params, see
    /// [`call_params()`]; positional params, a malformed `_meta`, not initialized: see
    /// `Session::handle_request`) under the name it gave (empty when none) and the arguments
    /// as it sent them (whatever their type; redacted as any call's when recorded), and returns
    /// the error. Nothing to record without a transcript.
    pub(super) fn refuse_malformed(
        &self,
        id: &Value,
        key: Option<u64>,
        refusal: Malformed,
    ) -> Value {
        let Malformed { error, params } = refusal;
        if self.transcript.is_some() {
            let key = key.unwrap_or_else(|| self.next_key());
            let name = small_map::get(&params, "name").and_then(Value::as_str);
            let name = name.unwrap_or_default().to_owned();
            OpenCall::new(self, key, call_id_of(id), name, params).refused(&error);
        }
        error
    }

    /// Forwards a call to the server `route` names (or its cassette), as a call in flight
    /// there. Returns the server, its name of the tool, the tool's settings and the outcome.
    async fn call_routed(
        self: &Arc<Self>,
        route: &Route,
        open: &mut OpenCall<'_>,
        leg: &Leg<'_>,
    ) -> Result<(String, String, ToolSettings, CallOutcome), NotEnveloped> {
        let settings = self.tool_settings(&route.server, &route.tool);
        small_map::set(&mut open.params, "name", Value::from(&*route.tool));
        let token = super::cancelled_progress::request_progress_token(&open.params);
        let session = leg.session.map(|s| s.id());
        let slot = Some(leg.slot.clone());
        let entry = self
            .calls
            .enter(open.key, &route.server, session, token, slot);
        open.in_flight = Some(entry);
        open.routed(&route.server, &route.tool, settings);
        let call_outcome = self
            .forward(route, &open.name, &mut open.params, &settings, leg)
            .await?;
        Ok((
            String::from(&*route.server),
            String::from(&*route.tool),
            settings,
            call_outcome,
        ))
    }

    /// Keeps a truncated result for paging, writes the transcript record, and makes the log
    /// line.
    fn finish(
        &self,
        pager: Option<&crate::page_tool::Pager>,
        id: &Value,
        mut done: Finished,
    ) -> (Mapped, CallSummary) {
        let facts = &done.facts;
        let (o, p) = (done.outcome.as_ref(), done.payload.as_ref());
        self.keep_page_rows(pager, id, facts, &mut done.mapped, o, p);
        self.record(&mut done);
        let summary = CallSummary {
            call_id: done.facts.call_id,
            tool: done.facts.tool,
            server: done.facts.server,
            status: done.mapped.envelope.status,
            omitted: done.mapped.envelope.omitted,
            duration: done.duration,
            _payload: done.payload,
        };
        (done.mapped, summary)
    }

    /// Writes a call's transcript record (when recording). A large result mapped in one pass
    /// is recorded from its text by the writer thread, never as a tree (it leaves `payload`).
    pub(super) fn record(&self, done: &mut Finished) {
        let Some(writer) = &self.transcript else {
            return;
        };
        let mut events = self.calls.take_events(done.key);
        // Secrets written inside strings, as in the arguments (`Core::redact_secrets`).
        for event in &mut events {
            crate::redact::redact_embedded_json(event);
        }
        // Recording into the cassette itself: a call it answered is in it already, and the
        // proxy's own answers (the page tool's, an unknown tool's) and cancelled calls are no
        // server's answers to play back (a page is made again from its call), so none of them
        // is appended.
        let into_cassette = self.cassette.get().is_some_and(|c| c.records_into_itself());
        let own_answer = matches!(
            done.outcome,
            Some(
                Outcome::NoSuchTool { .. }
                    | Outcome::NotRecorded { .. }
                    | Outcome::Page { .. }
                    | Outcome::PageError { .. }
                    | Outcome::Cancelled
            )
        );
        if into_cassette && (done.replayed || done.refused || own_answer) {
            return;
        }
        let facts = &done.facts;
        let settings = &facts.settings;
        // The arguments without the values of the server's secrets (its env, its credentials),
        // as its answers are: a client may repeat one, and transcripts never hold them. A call
        // no server took (an unknown tool) goes without every configured server's secrets.
        let mut arguments = std::mem::take(&mut done.arguments);
        self.redact_secrets(&facts.server, &mut arguments);
        let record = |outcome| {
            CallRecord::new(
                done.started_at.unwrap_or_else(SystemTime::now),
                // The writer numbers the record as it is queued (no number is left unused).
                0,
                &facts.call_id,
                &facts.tool,
                &facts.server,
                &facts.server_tool,
                arguments,
                writer.redact_keys(),
                settings.char_budget.value,
                settings.tool_timeout.value,
                settings.media.value,
                outcome,
                done.mapped.envelope.clone(),
                done.duration,
                events,
            )
            .with_budget(RecordedBudget::of(settings))
        };
        match (done.outcome.take(), done.payload.take()) {
            (Some(outcome), payload) => {
                writer.record(record(outcome));
                done.payload = payload;
            }
            (None, Some(raw)) => {
                let placeholder = Outcome::Result {
                    result: Value::Null,
                };
                writer.record_response_line(record(placeholder), raw.into_line());
            }
            (None, None) => {}
        }
    }

    /// Replaces in `arguments`, as a transcript records them, secrets written inside strings
    /// (`crate::redact::redact_embedded_json`) and server `server`'s ([`SecretValues`]): the
    /// running server's; its config table's when it is not running (a strict cassette starts
    /// none); every server's when none has that name. Returns whether anything was replaced.
    fn redact_secrets(&self, server: &str, arguments: &mut Value) -> bool {
        let embedded = crate::redact::redact_embedded_json(arguments);
        if let Some(ds) = self.servers().iter().find(|d| d.name() == server) {
            return ds.secrets().redact_json(arguments) | embedded;
        }
        let config = self.config();
        let named = config.servers.iter().any(|s| s.name == server);
        let tables = config.servers.iter().filter(|s| !named || s.name == server);
        tables.fold(embedded, |changed, s| {
            let secrets = SecretValues::for_server(s.remote.as_ref(), &s.env, &s.args);
            secrets.redact_json(arguments) | changed
        })
    }

    /// A copy of `arguments` as a transcript records them ([`Core::redact_secrets`]); `None`
    /// when that changes nothing.
    fn without_secrets(&self, server: &str, arguments: &Value) -> Option<Value> {
        let mut copy = arguments.clone();
        self.redact_secrets(server, &mut copy).then_some(copy)
    }

    /// Sends a routed call: the cassette's answer when it has one, else the server's (or why
    /// there was none).
    async fn forward(
        self: &Arc<Self>,
        route: &Route,
        name: &str,
        params: &mut Map<String, Value>,
        settings: &ToolSettings,
        leg: &Leg<'_>,
    ) -> Result<CallOutcome, NotEnveloped> {
        let arguments = small_map::get(params, "arguments").unwrap_or(&Value::Null);
        let recorded = self.cassette.get().and_then(|c| {
            // Matched as recorded: without the server's secrets (see `record`).
            let as_recorded = self.without_secrets(&route.server, arguments);
            let arguments = as_recorded.as_ref().unwrap_or(arguments);
            c.answer(&route.server, &route.tool, name, arguments)
        });
        if let Some(outcome) = recorded {
            return Ok(CallOutcome::Replayed(outcome));
        }
        let servers = self.servers();
        let Some(ds) = servers.iter().find(|d| d.name() == &*route.server) else {
            let reason = "not started".into();
            return Ok(CallOutcome::Outcome(Outcome::Unavailable { reason }));
        };
        let timeout = settings.tool_timeout.value;
        // Arguments whose numbers would not survive parsing go as written.
        let parsed_arguments =
            crate::exact_args::take(params).and_then(|text| crate::exact_args::mark(params, &text));
        // Boxed: see `answer_request` (src/proxy/dispatch.rs).
        let flow = Box::pin(self.call_downstream(ds, params, timeout, leg, name)).await;
        if let Some(arguments) = parsed_arguments {
            params.insert("arguments".into(), arguments);
        }
        let result = match flow {
            Flow::Done(result) => result,
            Flow::Interim(result) => return Err(NotEnveloped::Result(result)),
            Flow::Refused(error) => return Err(NotEnveloped::Error(error)),
        };
        Ok(match result {
            // Without a transcript, nothing needs the whole result: map it from its text,
            // parsing only what the budget can use.
            Ok(Ok(body)) => self.result_outcome(leg.key, body),
            Ok(Err(error)) => CallOutcome::Outcome(self.rpc_error_outcome(leg.key, error)),
            Err(e) => CallOutcome::Outcome(outcome_of(Err(e), timeout)),
        })
    }
}

/// The downstream leg's context: the call's key (its transcript events go there),
/// where the downstream id goes, the request's 2026-07-28 fields, the session that made the
/// call.
pub(super) struct Leg<'a> {
    pub key: u64,
    pub slot: &'a DownstreamSlot,
    pub modern: Option<&'a Arc<RequestMeta>>,
    pub session: Option<&'a Arc<Session>>,
}

/// The call's `answer` (the mapped outcome and its log line), or when `url_error` is given, that
/// error for the client, the call logged here (see [`url_elicitation_error`]).
fn unless_url_elicitation(
    url_error: Option<Value>,
    answer: (Mapped, CallSummary),
) -> Result<(Mapped, CallSummary), NotEnveloped> {
    let Some(error) = url_error else {
        return Ok(answer);
    };
    answer.1.log();
    Err(NotEnveloped::Error(error))
}

/// The URL-elicitation-required error of an `rpc_error` outcome (JSON-RPC -32042, MCP
/// 2025-11-25 "Elicitation: URL mode"), which the client must get as that JSON-RPC error, not
/// enveloped, to open the URL and retry; `None` for any other outcome. From a server or played
/// back from a cassette alike.
fn url_elicitation_error(outcome: Option<&Outcome>) -> Option<Value> {
    match outcome? {
        Outcome::RpcError { error } if is_url_elicitation_required(error) => Some(error.clone()),
        _ => None,
    }
}

/// The facts of a call its server (or the proxy) answered (the server, its name
/// of the tool, the tool's settings, the outcome), and the outcome. An unknown name is shown
/// as `unrouted` gives it (one longer than any tool's, cut). While a large result is still to
/// be mapped on the blocking pool, `open` keeps its id and name (copied, not taken), so that
/// a call cancelled then is recorded as cancelled.
fn call_facts(
    (server, server_tool, settings, call_outcome): (String, String, ToolSettings, CallOutcome),
    open: &mut OpenCall<'_>,
) -> (CallFacts, CallOutcome) {
    if let CallOutcome::Outcome(Outcome::NoSuchTool { .. }) = &call_outcome {
        open.name.clone_from(&server_tool);
    }
    // Only a result mapped off the runtime thread leaves room for a cancel meanwhile.
    let raw = matches!(&call_outcome, CallOutcome::Raw(r) if r.len() >= OFFLOAD_MIN_BYTES);
    let keep = |s: &mut String| if raw { s.clone() } else { std::mem::take(s) };
    let facts = CallFacts {
        call_id: keep(&mut open.call_id),
        tool: keep(&mut open.name),
        server,
        server_tool,
        settings,
    };
    (facts, call_outcome)
}

/// Maps a large raw response in one pass, on the blocking pool.
async fn map_raw_off_thread(
    raw: RawResponse,
    facts: &CallFacts,
) -> (Mapped, Option<RawResponse>, Option<Outcome>) {
    let timeout = facts.settings.tool_timeout.value;
    if raw.len() < OFFLOAD_MIN_BYTES {
        // Mapped right here (`cpu_bound` would run it inline too), without copying the facts.
        let (mapped, parsed) = map_raw(&raw, &facts.mapping_context(), timeout);
        return (mapped, Some(raw), parsed);
    }
    let facts = facts.clone();
    let work = crate::offload::cpu_bound(raw.len(), move || {
        #[cfg(test)]
        hold::at_mapping(&facts.call_id);
        let (mapped, parsed) = map_raw(&raw, &facts.mapping_context(), timeout);
        (mapped, parsed, raw)
    });
    let (mapped, parsed, raw) = work.await;
    (mapped, Some(raw), parsed)
}

/// Maps a raw response ([`RawResponse`]): lazily when it is a valid success response (no
/// outcome returned), else parsed in full and returned with the [`Outcome`] it gave (an invalid
/// one becomes `Outcome::InvalidResponse`).
fn map_raw(
    raw: &RawResponse,
    ctx: &MappingContext<'_>,
    timeout: Duration,
) -> (Mapped, Option<Outcome>) {
    if let Some(mapped) = map_raw_response(raw.as_str(), ctx) {
        return (mapped, None);
    }
    let outcome = outcome_of(raw.parse(), timeout);
    (map_outcome(&outcome, ctx), Some(outcome))
}

/// Maps a downstream request's result to the raw [`Outcome`].
fn outcome_of(result: Result<Result<Value, Value>, CallError>, timeout: Duration) -> Outcome {
    match result {
        Ok(Ok(result)) => Outcome::Result { result },
        Ok(Err(error)) => Outcome::RpcError { error },
        Err(CallError::Timeout(_)) => Outcome::timeout(timeout),
        Err(CallError::Exited(detail)) => Outcome::ServerExited { detail },
        Err(CallError::Invalid(detail)) => Outcome::InvalidResponse { detail },
        Err(CallError::Unavailable(reason)) => Outcome::Unavailable { reason },
        Err(CallError::HttpStatus {
            status,
            retry_after,
            detail,
        }) => Outcome::HttpStatus {
            status,
            retry_after,
            detail,
        },
        Err(CallError::Connection(detail)) => Outcome::ConnectionFailed { detail },
    }
}

/// Tests only: holds the mapping of a large result of a call of a given id until the test
/// lets it go, so that a test can cancel the call while it is being mapped.
#[cfg(test)]
pub(super) mod hold {
    use std::collections::HashMap;
    use std::sync::mpsc::{Receiver, SyncSender};
    use std::sync::Mutex;

    /// Per call id: where to say the mapping started, and where the go-ahead comes from.
    type Holds = HashMap<String, (SyncSender<()>, Receiver<()>)>;
    static HOLDS: Mutex<Option<Holds>> = Mutex::new(None);

    /// Holds the mapping of call `call_id`: returns (mapping started, let it go).
    pub(in crate::proxy) fn hold(call_id: &str) -> (Receiver<()>, SyncSender<()>) {
        let (started_tx, started_rx) = std::sync::mpsc::sync_channel(1);
        let (go_tx, go_rx) = std::sync::mpsc::sync_channel(1);
        let mut holds = HOLDS.lock().unwrap();
        let holds = holds.get_or_insert_with(HashMap::new);
        holds.insert(call_id.to_owned(), (started_tx, go_rx));
        (started_rx, go_tx)
    }

    /// Called as a large result's mapping starts: waits when its call is held.
    pub(super) fn at_mapping(call_id: &str) {
        let held = HOLDS
            .lock()
            .unwrap()
            .as_mut()
            .and_then(|h| h.remove(call_id));
        if let Some((started, go)) = held {
            let _ = started.send(());
            let _ = go.recv();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_line_is_the_text_its_format_string_gave() {
        for (omitted, millis) in [(0, 0), (7, 12), (10, 999), (u64::MAX, 86_400_000)] {
            for status in [Status::Ok, Status::Truncated, Status::Error] {
                let summary = CallSummary {
                    call_id: "a\"b é".into(),
                    tool: "git_log".into(),
                    server: String::new(),
                    status,
                    omitted,
                    duration: Duration::from_micros(millis * 1000 + 999),
                    _payload: None,
                };
                let want = format!(
                    "tools/call call_id={} tool={} server={} status=\"{}\" omitted={} duration_ms={}",
                    summary.call_id,
                    summary.tool,
                    summary.server,
                    status.as_str(),
                    omitted,
                    millis,
                );
                assert_eq!(summary.line(), want);
            }
        }
    }
}
