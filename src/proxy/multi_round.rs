//! The downstream leg of a `tools/call` when a server needs input from the client, in every
//! pairing of eras (rules and table in [`crate::mrtr`]).
//!
//! - Modern client: while the call runs, a legacy server's `sampling/createMessage`,
//!   `elicitation/create` or `roots/list` comes to the call ([`MultiRound::waiter_for`]) instead
//!   of going to the client as a request. If the request's `clientCapabilities` declare it, the
//!   call is parked under a fresh `requestState` of ours and the client gets an
//!   `InputRequiredResult`; the retry carrying that state resumes the parked call (the server's
//!   requests get the client's `inputResponses`) and is answered with the envelope. The call's
//!   `tool_timeout_sec` counts only while it is not parked; a parked call nobody resumes within
//!   [`PARK_TTL`] is cancelled downstream. A state we never issued, or one already used, is
//!   -32602. A modern server's own `InputRequiredResult` reaches the client unchanged.
//! - Legacy client: a modern server's `InputRequiredResult` is fulfilled through the client's
//!   own sampling/elicitation/roots (when it declared them at `initialize`) and the call is
//!   retried downstream, at most [`MAX_ROUNDS`] times.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info};

use super::calls::Leg;
use super::calls_in_flight::slot_id;
use super::round_events::{answer_event, request_event, InputAnswer};
use super::{Core, DownstreamSlot};
use crate::downstream::{CallError, Downstream, ResultBody};
use crate::era::RequestMeta;
use crate::mrtr::{self, InputRequest, MAX_ROUNDS};

/// How long a parked call waits for the client's retry before it is cancelled downstream.
pub const PARK_TTL: Duration = Duration::from_secs(600);

/// How long a downstream request may take when our own clock (which stops while the call is
/// parked) bounds it instead.
const UNBOUNDED: Duration = Duration::from_secs(365 * 24 * 3600);

type CallResult = Result<Result<ResultBody, Value>, CallError>;
type CallFuture = Pin<Box<dyn Future<Output = CallResult> + Send>>;

/// How the downstream leg of a call ended.
pub(super) enum Flow {
    /// With the server's answer (or why there was none): enveloped as usual.
    Done(CallResult),
    /// With an `InputRequiredResult` for the client (not enveloped).
    Interim(Value),
    /// With a JSON-RPC error object for the client (a bad or unknown `requestState`).
    Refused(Value),
}

/// A server-to-client request handed to the call it belongs to: its method and params, its
/// transcript event (when recording; the call that takes it records it), and where the answer
/// goes.
pub(super) struct InputAsk {
    method: String,
    params: Option<Value>,
    event: Option<Value>,
    reply: Reply,
}

/// Where the answer to an [`InputAsk`] goes: the client's result or the JSON-RPC error object
/// the server gets, with the key (start order, see `calls_in_flight.rs`) of the `tools/call`
/// request the call is driven by when it is answered (a resumed call's retry), whose record
/// takes the answer's transcript event.
type Reply = oneshot::Sender<(Result<Value, Value>, u64)>;

/// The calls that take a server's requests: (our key, server, where to hand a request).
/// Calls that take their server's requests: (waiter id, server, where the call's downstream
/// request went, the call's queue).
type Waiters = Arc<Mutex<Vec<(u64, String, DownstreamSlot, mpsc::UnboundedSender<InputAsk>)>>>;

/// A call in progress for a modern client: its downstream request and what it waits for.
struct Running {
    tool: String,
    future: CallFuture,
    asks: mpsc::UnboundedReceiver<InputAsk>,
    /// The server's requests waiting for the client's `inputResponses`, by our key.
    waiting: Vec<(String, Reply)>,
    /// What is left of `tool_timeout_sec`.
    remaining: Duration,
    timeout: Duration,
    slot: DownstreamSlot,
    /// The `_meta.progressToken` (JSON text) its downstream request set: a retry resuming the
    /// call gets the server's progress under it.
    progress_token: Option<String>,
    /// The start order of the `tools/call` request it is driven by (the first, then each
    /// retry that resumes it): its transcript events go there.
    key: u64,
    /// While parked: the transcript events of its rounds so far, for the retry's record.
    carried: Vec<Value>,
    /// Whether the server may answer with an `InputRequiredResult` (a 2026-07-28 server, or
    /// one whose era is not known): a 2025-era server's is enveloped as an error, as for a
    /// legacy client, since no `requestState` of it could be retried.
    server_rounds: bool,
    _waiter: WaiterGuard,
}

/// The multi-round state of the proxy: parked calls by our `requestState` (a stateless retry
/// may come through any session), and the calls of modern clients that take a server's
/// requests, oldest first, per server.
#[derive(Default)]
pub(super) struct MultiRound {
    parked: Arc<Mutex<HashMap<String, Running>>>,
    waiters: Waiters,
    next_waiter: AtomicU64,
    /// The transcript events of calls a modern server answered with `input_required`.
    pub(super) kept: super::round_events::KeptRounds,
}

/// Removes a call from the waiters when it ends (or is dropped by a cancellation).
struct WaiterGuard {
    id: u64,
    waiters: Waiters,
}

impl Drop for WaiterGuard {
    fn drop(&mut self) {
        self.waiters
            .lock()
            .unwrap()
            .retain(|(id, ..)| *id != self.id);
    }
}

impl MultiRound {
    /// The call of a modern client on `server` that takes a request of it: the one whose
    /// downstream request is `cause` when the transport linked the request to one (none when
    /// that call is not a modern client's). Without a link (stdio) it is a guess: the oldest
    /// such call that is running; a parked call (its earlier request still waits for the
    /// client's retry) only when no other call is in flight on `server` (`in_flight` counts
    /// the running calls there, of either era: parked ones are not in flight), since a server
    /// asks one thing at a time for a call far more often than it asks for two.
    pub(super) fn waiter_for(
        &self,
        server: &str,
        cause: Option<u64>,
        in_flight: usize,
    ) -> Option<mpsc::UnboundedSender<InputAsk>> {
        let parked: Vec<u64> = {
            let parked = self.parked.lock().unwrap();
            parked.values().map(|r| r._waiter.id).collect()
        };
        let waiters = self.waiters.lock().unwrap();
        let mut on_server = waiters.iter().filter(|(_, s, ..)| s == server);
        if let Some(cause) = cause {
            let linked = on_server.find(|(_, _, slot, _)| slot_id(slot) == Some(cause));
            return linked.map(|(.., tx)| tx.clone());
        }
        let (running, waiting): (Vec<_>, Vec<_>) =
            on_server.partition(|(id, ..)| !parked.contains(id));
        match (running.first(), waiting.first()) {
            (Some((.., tx)), _) => Some(tx.clone()),
            (None, Some((.., tx))) if in_flight == 0 => Some(tx.clone()),
            _ => None,
        }
    }

    fn register(
        &self,
        server: &str,
        slot: &DownstreamSlot,
    ) -> (WaiterGuard, mpsc::UnboundedReceiver<InputAsk>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let id = self.next_waiter.fetch_add(1, Ordering::Relaxed);
        self.waiters
            .lock()
            .unwrap()
            .push((id, server.to_owned(), slot.clone(), tx));
        let guard = WaiterGuard {
            id,
            waiters: self.waiters.clone(),
        };
        (guard, rx)
    }
}

/// Hands a server's request to the call that takes it and waits for the client's answer
/// (`Ok`: the client's result or the JSON-RPC error object the server gets, and the `key` of
/// the call's request whose record takes the answer's event; the call records `event`, the
/// request's, when it takes it). `Err(Untaken)` when the call ended without taking it (before
/// it was handed over, or while it waited in the call's queue): the request is for the caller
/// to put elsewhere.
pub(super) async fn ask_call(
    call: mpsc::UnboundedSender<InputAsk>,
    method: &str,
    params: Option<Value>,
    event: Option<Value>,
) -> Result<(Result<Value, Value>, u64), Untaken> {
    let (reply, answer) = oneshot::channel();
    let ask = InputAsk {
        method: method.to_owned(),
        params,
        event,
        reply,
    };
    call.send(ask).map_err(|_| Untaken)?;
    answer.await.map_err(|_| Untaken)
}

/// A server's request that the call it was handed to did not take: the call ended first.
#[derive(Debug)]
pub(super) struct Untaken;

/// Tells the server the call was given up (its request id is in the slot).
fn cancel_downstream(slot: &DownstreamSlot, reason: &str) {
    slot.cancel(Some(Value::from(reason)));
}

impl Core {
    /// The downstream leg of a `tools/call` (see the module doc). `params` are the forwarded
    /// params (the server's own tool name), `tool` the name the client used.
    pub(super) async fn call_downstream(
        self: &Arc<Self>,
        ds: &Downstream,
        params: &mut Map<String, Value>,
        timeout: Duration,
        leg: &Leg<'_>,
        tool: &str,
    ) -> Flow {
        let slot = leg.slot;
        let (state, responses) = match mrtr::retry_fields(params) {
            Ok(fields) => fields,
            Err(error) => return Flow::Refused(error),
        };
        let Some(meta) = leg.modern else {
            if ds.speaks_modern() == Some(true) {
                // The rarer paths boxed: their states are kilobytes (see `answer_request`).
                let fulfil = self.fulfil_for_legacy_client(ds, params, timeout, leg);
                return Box::pin(fulfil).await;
            }
            // A legacy server's answer is taken as it is (an `input_required` from one is
            // enveloped as an error).
            // Its result is mapped from its text (no tree: see `start_request_bounded`).
            return Flow::Done(request_lent(ds, params, timeout, slot).await);
        };
        if let Some(state) = state.as_deref().filter(|s| mrtr::is_ours(s)) {
            return Box::pin(self.resume(state, responses, meta, tool, leg)).await;
        }
        if state.is_some() && ds.speaks_modern() == Some(false) {
            let error = crate::era::invalid_params("`requestState` was not issued for this call: unknown to this server and to mcp-envelope");
            return Flow::Refused(error);
        }
        self.resume_round_events(leg.key, tool, state.as_deref(), &responses);
        let (waiter, asks) = self.multi_round.register(ds.name(), slot);
        let progress_token = super::cancelled_progress::request_progress_token(params);
        let running = Running {
            tool: tool.to_owned(),
            // Its result comes back as text, as a legacy client's does.
            future: start_request(ds, params, slot, self.transcript.is_some()),
            asks,
            waiting: Vec::new(),
            remaining: timeout,
            timeout,
            slot: slot.clone(),
            progress_token,
            key: leg.key,
            carried: Vec::new(),
            server_rounds: ds.speaks_modern() != Some(false),
            _waiter: waiter,
        };
        self.drive(running, meta).await
    }

    /// Waits for a modern client's call: its answer, a server request to park it for, or the
    /// end of its time.
    async fn drive(self: &Arc<Self>, mut running: Running, meta: &RequestMeta) -> Flow {
        loop {
            let started = tokio::time::Instant::now();
            let ask = tokio::select! {
                result = &mut running.future => {
                    let flow = match running.server_rounds {
                        true => interim_or_done(result),
                        false => Flow::Done(result),
                    };
                    if let Flow::Interim(interim) = &flow {
                        self.keep_round_events(running.key, &running.tool, interim);
                    }
                    return flow;
                }
                ask = running.asks.recv() => ask,
                _ = tokio::time::sleep(running.remaining) => {
                    cancel_downstream(&running.slot, "timed out in mcp-envelope");
                    return Flow::Done(Err(CallError::Timeout(running.timeout)));
                }
            };
            running.remaining = running.remaining.saturating_sub(started.elapsed());
            let Some(first) = ask else { continue };
            let mut asks = vec![first];
            while let Ok(more) = running.asks.try_recv() {
                asks.push(more);
            }
            let mut requests = Vec::new();
            for mut ask in asks {
                if let Some(event) = ask.event.take() {
                    self.calls.push_event(running.key, event);
                }
                let capability = mrtr::capability_for(&ask.method);
                match capability.filter(|c| meta.declares(c)) {
                    Some(_) => {
                        let key = (running.waiting.len() + 1).to_string();
                        requests.push(InputRequest {
                            key: key.clone(),
                            method: ask.method,
                            params: ask.params,
                        });
                        running.waiting.push((key, ask.reply));
                    }
                    None => {
                        let why = match capability {
                            Some(c) => {
                                format!("this request's clientCapabilities do not declare `{c}`")
                            }
                            None => "MCP 2026-07-28 has no such request to a client".into(),
                        };
                        let refusal = Err(mrtr::refused(&ask.method, &why));
                        let _ = ask.reply.send((refusal, running.key));
                    }
                }
            }
            if !requests.is_empty() {
                return Flow::Interim(self.park(running, &requests));
            }
        }
    }

    /// Parks a call under a fresh state; returns the `InputRequiredResult` for the client. The
    /// call's transcript events so far go with it (see `round_events.rs`).
    fn park(&self, mut running: Running, requests: &[InputRequest]) -> Value {
        running.carried = self.calls.take_events(running.key);
        let state = mrtr::new_state();
        info!(tool = %running.tool, inputs = requests.len(), "call parked until the client retries with its input");
        let result = mrtr::input_required_result(requests, &state);
        self.multi_round
            .parked
            .lock()
            .unwrap()
            .insert(state.clone(), running);
        let parked = self.multi_round.parked.clone();
        tokio::spawn(async move {
            tokio::time::sleep(PARK_TTL).await;
            let expired = parked.lock().unwrap().remove(&state);
            if let Some(running) = expired {
                debug!(tool = %running.tool, "parked call expired: the client never retried");
                cancel_downstream(&running.slot, "the client never supplied the input");
            }
        });
        result
    }

    /// Resumes the call parked under `state` with the client's `responses`, driven from now on
    /// by the retry `leg` (its record takes the earlier rounds' events).
    async fn resume(
        self: &Arc<Self>,
        state: &str,
        mut responses: Map<String, Value>,
        meta: &RequestMeta,
        tool: &str,
        leg: &Leg<'_>,
    ) -> Flow {
        let slot = leg.slot;
        let taken = {
            let mut parked = self.multi_round.parked.lock().unwrap();
            match parked.remove(state) {
                Some(running) if running.tool != tool => {
                    let owner = running.tool.clone();
                    parked.insert(state.to_owned(), running);
                    Err(format!("`requestState` belongs to a call of tool `{owner}`, not `{tool}`"))
                }
                Some(running) => Ok(running),
                None => Err("`requestState` is unknown: it was never issued, it expired, or its call has already ended".into()),
            }
        };
        let mut running = match taken {
            Ok(running) => running,
            Err(why) => return Flow::Refused(crate::era::invalid_params(&why)),
        };
        running.key = leg.key;
        let earlier = std::mem::take(&mut running.carried);
        self.calls.carry_events(running.key, earlier);
        for (key, reply) in running.waiting.drain(..) {
            let answer = responses.remove(&key).ok_or_else(|| {
                crate::era::invalid_params(&format!(
                    "the client gave no response for input request `{key}`"
                ))
            });
            let _ = reply.send((answer, running.key));
        }
        // The retry is the request a client cancellation now names.
        slot.copy_from(&running.slot);
        running.slot = slot.clone();
        self.calls
            .continue_progress(slot, running.progress_token.clone());
        self.drive(running, meta).await
    }

    /// A legacy client's call: a modern server's input requests are put to the client, and the
    /// call retried with the answers. Each request and its answer are the call's transcript
    /// events (see `round_events.rs`).
    async fn fulfil_for_legacy_client(
        self: &Arc<Self>,
        ds: &Downstream,
        params: &mut Map<String, Value>,
        timeout: Duration,
        leg: &Leg<'_>,
    ) -> Flow {
        let slot = leg.slot;
        // The first round sends the client's params themselves; a retry, its own.
        let mut forwarded = None;
        for _round in 0..=MAX_ROUNDS {
            // Results come back as text (see `start_request_bounded`); only an
            // `InputRequiredResult` is parsed here.
            let result = match &forwarded {
                None => request_lent(ds, params, timeout, slot).await,
                Some(retry) => start_request_bounded(ds, retry, timeout, slot).await,
            };
            let interim = match &result {
                Ok(Ok(ResultBody::Value(r))) if mrtr::is_input_required(r) => r.clone(),
                Ok(Ok(ResultBody::Raw(raw))) => match mrtr::input_required_of_line(raw.as_str()) {
                    Some(interim) => interim,
                    None => return Flow::Done(result),
                },
                _ => return Flow::Done(result),
            };
            let requests = match mrtr::input_requests(&interim) {
                Ok(requests) => requests,
                Err(why) => {
                    return Flow::Done(Ok(Ok(ResultBody::Value(tool_error(ds.name(), &why)))))
                }
            };
            let ask = |request: InputRequest| async move {
                let answer = self.ask_legacy_client(leg, ds.name(), &request).await;
                answer.map_err(|(error, _)| error)
            };
            let responses = match mrtr::collect_responses(requests, ask).await {
                Ok(responses) => responses,
                Err(error) => return Flow::Done(Ok(Err(error))),
            };
            let state = interim.get("requestState").and_then(Value::as_str);
            forwarded = Some(mrtr::retry_params(params, responses, state));
        }
        let why = format!("still asked for input after {MAX_ROUNDS} rounds");
        Flow::Done(Ok(Ok(ResultBody::Value(tool_error(ds.name(), &why)))))
    }

    /// Puts one input request of a modern server to the legacy client of `leg` under a fresh
    /// id, if it declared the capability; the request and the answer are the call's transcript
    /// events, as a legacy server's request would be.
    async fn ask_legacy_client(
        &self,
        leg: &Leg<'_>,
        server: &str,
        request: &InputRequest,
    ) -> InputAnswer {
        let id = super::client_requests::input_id();
        let recording = self.transcript.is_some();
        if recording {
            let event = request_event(id.clone(), &request.method, request.params.clone());
            self.calls.push_event(leg.key, event);
        }
        let answer =
            super::client_requests::ask_legacy_session(leg.session, server, &id, request).await;
        if let Err((error, by)) = &answer {
            let noted = super::events::input_error(&request.method, error, *by);
            self.calls.note_input_error(leg.key, noted);
        }
        if recording {
            self.calls.push_event(leg.key, answer_event(id, &answer));
        }
        answer
    }
}

/// A modern server's `InputRequiredResult` goes to the modern client as it is.
fn interim_or_done(result: CallResult) -> Flow {
    match result {
        Ok(Ok(ResultBody::Value(r))) if mrtr::is_input_required(&r) => Flow::Interim(r),
        Ok(Ok(ResultBody::Raw(raw))) => match mrtr::input_required_of_line(raw.as_str()) {
            Some(r) => Flow::Interim(r),
            None => Flow::Done(Ok(Ok(ResultBody::Raw(raw)))),
        },
        other => Flow::Done(other),
    }
}

/// A tool result with `isError: true` and `text` naming `server` (an error envelope).
fn tool_error(server: &str, text: &str) -> Value {
    json!({"content": [{"type": "text", "text": format!("server '{server}' needs input from the client: {text}")}], "isError": true})
}

/// The downstream request of a call as an owned future, bounded only by [`UNBOUNDED`] (the
/// caller keeps the time); the downstream id goes into `slot` once sent. A successful result
/// comes back as its text (see [`start_request_bounded`]), in which [`interim_or_done`] finds
/// an `InputRequiredResult`. The future may outlive the call's borrow of `params` (a parked
/// call): they are copied into it when the call is `recorded` (its record reads them after
/// the call), else moved, leaving an empty map.
fn start_request(
    ds: &Downstream,
    params: &mut Map<String, Value>,
    slot: &DownstreamSlot,
    recorded: bool,
) -> CallFuture {
    let params = match recorded {
        true => Value::Object(params.clone()),
        false => Value::Object(std::mem::take(params)),
    };
    let (ds, slot) = (ds.clone(), slot.clone());
    Box::pin(async move { start_request_bounded(&ds, &params, UNBOUNDED, &slot).await })
}

/// [`start_request_bounded`] with `params` lent to the request (taken and put back), not
/// copied. They are put back also when the call is dropped while it waits (its client
/// cancelled it): its transcript record needs its arguments ([`Lent`]).
async fn request_lent(
    ds: &Downstream,
    params: &mut Map<String, Value>,
    timeout: Duration,
    slot: &DownstreamSlot,
) -> CallResult {
    let lent = Lent::take(params);
    start_request_bounded(ds, &lent.value, timeout, slot).await
}

/// A call's params lent to its request: put back where they were taken from when dropped.
struct Lent<'a> {
    params: &'a mut Map<String, Value>,
    value: Value,
}

impl<'a> Lent<'a> {
    fn take(params: &'a mut Map<String, Value>) -> Lent<'a> {
        let value = Value::Object(std::mem::take(params));
        Lent { params, value }
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Value::Object(map) = std::mem::take(&mut self.value) {
            *self.params = map;
        }
    }
}

/// A `tools/call` request to `ds`, its downstream id put in `slot` once sent. A successful
/// result comes back as its text ([`Downstream::request_with`] with `raw`): the call maps it
/// without a `Value` tree when it is small and of a common shape
/// (`envelope_core::mapping::fast`; half of a small call's instructions were that tree), or in
/// one pass when it is large, and a transcript records it verbatim
/// (`TranscriptWriter::record_response_line`); an `InputRequiredResult` is found in it by
/// [`mrtr::input_required_of_line`].
async fn start_request_bounded(
    ds: &Downstream,
    params: &Value,
    timeout: Duration,
    slot: &DownstreamSlot,
) -> CallResult {
    ds.request_with(
        "tools/call",
        Some(params),
        timeout,
        &mut |conn, downstream_id| {
            slot.set(conn, downstream_id);
        },
        true,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call of a modern client on server `s`: the channel its server's requests reach it
    /// by, and, when it is running (`parked: false`), the call itself, which the test keeps
    /// alive for as long as the call should be in flight; a parked call (`parked: true`) is
    /// kept in `multi`'s parked map.
    fn call(
        multi: &MultiRound,
        parked: bool,
    ) -> (mpsc::UnboundedSender<InputAsk>, Option<Running>) {
        let slot = DownstreamSlot::default();
        let (waiter, asks) = multi.register("s", &slot);
        let tx = multi.waiters.lock().unwrap().last().unwrap().3.clone();
        let running = Running {
            tool: "t".into(),
            future: Box::pin(std::future::pending()),
            asks,
            waiting: Vec::new(),
            remaining: Duration::from_secs(60),
            timeout: Duration::from_secs(60),
            slot,
            progress_token: None,
            key: 0,
            carried: Vec::new(),
            server_rounds: true,
            _waiter: waiter,
        };
        if !parked {
            return (tx, Some(running));
        }
        let key = format!("parked-{}", running._waiter.id);
        multi.parked.lock().unwrap().insert(key, running);
        (tx, None)
    }

    #[test]
    fn an_unlinked_request_goes_to_a_running_call_before_a_parked_one() {
        let multi = MultiRound::default();
        let (_parked, _) = call(&multi, true);
        let (running, _call) = call(&multi, false);
        let got = multi.waiter_for("s", None, 1).unwrap();
        assert!(
            got.same_channel(&running),
            "the running call, though younger"
        );
        assert!(multi.waiter_for("other", None, 0).is_none());
    }

    #[test]
    fn a_parked_call_takes_an_unlinked_request_only_when_nothing_else_runs_on_its_server() {
        let multi = MultiRound::default();
        let (parked, _) = call(&multi, true);
        // A legacy client's call is in flight on the server: it is the likelier owner.
        assert!(multi.waiter_for("s", None, 1).is_none());
        let got = multi.waiter_for("s", None, 0).unwrap();
        assert!(got.same_channel(&parked));
    }
}
