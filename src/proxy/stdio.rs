//! The proxy over stdio: one [`Core`] and one [`Session`] over our stdin and stdout, with line
//! framing (a maximum length), reading paused while the client does not read its answers, and
//! `initialize` answered while stdin is still read ([`InitGate`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use jsonrpc_core::ErrorCode;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, oneshot};
use tracing::{info, warn};

use super::init_gate::InitGate;
use super::session::{parse_line, Session, SessionOutput};
use super::{Core, OUTPUT_QUEUE};
use crate::backpressure::{CountingWriter, OutputGate};
use crate::config::Config;
use crate::jsonrpc::{self, Frame, Incoming, LineReader, Message};
use crate::runtime::woken_only::WokenOnly;
use crate::transcript::TranscriptWriter;

/// Resolves when the session must end (a signal, or stdout closed).
type Stop<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Runs the proxy on `input` / `output` until `input` ends or `stop` resolves, then shuts every
/// server down and returns. Never returns an error for bad client input: that is answered.
pub async fn serve<R, W, S>(
    config: Arc<Config>,
    input: R,
    output: W,
    transcript: Option<TranscriptWriter>,
    cassette: Option<crate::cassette::Playback>,
    stop: S,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
    S: Future<Output = ()> + Send,
{
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(OUTPUT_QUEUE);
    // A client that closed our stdout can read no answer: that ends the session like a signal.
    let (stdout_gone, stdout_gone_rx) = oneshot::channel::<()>();
    let gate = OutputGate::new();
    let output = CountingWriter::new(output, gate.clone());
    let writer = tokio::spawn(async move {
        if let Err(e) = jsonrpc::write_lines(output, out_rx, std::future::pending()).await {
            warn!(error = %e, "writing stdout failed; shutting down");
            let _ = stdout_gone.send(());
        }
    });
    // Polled only once it woke: the reader's select polls it after every line otherwise.
    let stop: Stop<'_> = Box::pin(WokenOnly::new(Box::pin(async move {
        tokio::select! {
            _ = stop => info!("signal received; shutting down"),
            Ok(()) = stdout_gone_rx => {}
        }
    })));
    let core = Core::new(config.clone(), transcript);
    if let Some(playback) = cassette {
        core.set_cassette(playback);
    }
    core.set_output_gate(gate.clone());
    core.watch_config();
    let session = core.open_session(SessionOutput {
        lines: out_tx,
        gate: Some(gate.clone()),
    });
    let mut reader = LineReader::new(
        BufReader::with_capacity(256 * 1024, input),
        config.max_message_bytes(),
    );
    let stopped = read_client(&session, &mut reader, &gate, stop).await;
    let finish = async {
        // Let in-flight requests finish (their servers are still up), then stop everything.
        session.close().await;
        core.shutdown().await;
        // Requests still running got their error envelopes when their servers stopped.
        session.settle(Duration::from_secs(2)).await;
    };
    match stopped {
        Stopped::Signal => refuse_while(&session, &mut reader, &gate, finish).await,
        Stopped::InputEnded => finish.await,
    }
    core.flush_transcript();
    drop(session);
    drop(core);
    // The writer ends when the last sender is gone; a stuck grandchild must not keep us here.
    let _ = tokio::time::timeout(Duration::from_secs(3), writer).await;
    Ok(())
}

/// Why [`read_client`] returned.
enum Stopped {
    /// `stop` resolved (a signal, or stdout closed): stdin may still bring requests.
    Signal,
    /// Stdin ended or could not be read.
    InputEnded,
}

/// Reads the client's lines and feeds them to `session` until stdin ends, reading fails, or
/// `stop` resolves.
async fn read_client<R: AsyncBufRead + Unpin>(
    session: &Arc<Session>,
    reader: &mut LineReader<R>,
    gate: &OutputGate,
    mut stop: Stop<'_>,
) -> Stopped {
    let mut init = InitGate::default();
    loop {
        // A client that does not read its answers gets no more requests read meanwhile.
        if gate.is_full() {
            tokio::select! {
                _ = gate.room() => {}
                _ = &mut stop => return Stopped::Signal,
            }
        }
        let frame = tokio::select! {
            frame = reader.next_frame(), if !init.is_full() => frame,
            held = init.finished() => {
                if !feed_all(session, held, &mut stop).await {
                    return Stopped::Signal;
                }
                continue;
            }
            _ = &mut stop => return Stopped::Signal,
        };
        match frame {
            Ok(None) => {
                info!("stdin closed; shutting down");
                // Requests read while `initialize` ran are still handled.
                if init.is_running() {
                    let held = tokio::select! {
                        biased;
                        held = init.finished() => held,
                        _ = &mut stop => return Stopped::InputEnded,
                    };
                    feed_all(session, held, &mut stop).await;
                }
                return Stopped::InputEnded;
            }
            Err(e) => {
                warn!(error = %e, "reading stdin failed; shutting down");
                return Stopped::InputEnded;
            }
            Ok(Some(Frame::TooLong { len, head })) => session.reject_too_long(len, &head).await,
            Ok(Some(Frame::Line(line))) => {
                if !feed_line(session, line, &mut init, &mut stop).await {
                    return Stopped::Signal;
                }
            }
        }
    }
}

/// Runs `finish` while answering every request the client still sends with a JSON-RPC error
/// (-32000, the proxy is shutting down), as `serve --http` answers 503: a client is never
/// left waiting. Responses and notifications still go to `session` (an answer to a server's
/// request, or a cancellation, may concern a call being drained).
async fn refuse_while<R: AsyncBufRead + Unpin>(
    session: &Arc<Session>,
    reader: &mut LineReader<R>,
    gate: &OutputGate,
    finish: impl Future<Output = ()>,
) {
    tokio::pin!(finish);
    let mut reading = true;
    loop {
        // A client that does not read its answers is not read either (its answers would wait).
        let full = gate.is_full();
        let frame = tokio::select! {
            biased;
            () = &mut finish => return,
            () = gate.room(), if full => continue,
            frame = reader.next_frame(), if reading && !full => frame,
        };
        let line = match frame {
            Ok(Some(Frame::Line(line))) => line,
            Ok(Some(Frame::TooLong { len, head })) => {
                session.reject_too_long(len, &head).await;
                continue;
            }
            Ok(None) | Err(_) => {
                reading = false;
                continue;
            }
        };
        let answer = async {
            match parse_line(line).await {
                Ok(incoming) => refuse(session, incoming).await,
                Err((id, error)) => session.answer_parse_error(id, &error).await,
            }
        };
        // Shutting down never waits on the client.
        tokio::select! {
            biased;
            () = &mut finish => return,
            () = answer => {}
        }
    }
}

/// What the client gets for a request sent while the proxy shuts down.
const SHUTTING_DOWN: &str = "the proxy is shutting down; the request was not run";

/// Answers the requests in `incoming` with [`SHUTTING_DOWN`] (those of a batch in one array);
/// feeds everything else to `session`, the other members of a batch included (a response to a
/// server's request, a cancellation, or an invalid member, which `session` answers as usual).
async fn refuse(session: &Arc<Session>, incoming: Incoming) {
    let error = |id: Value| {
        let error = jsonrpc::error_object(ErrorCode::ServerError(-32000), SHUTTING_DOWN, None);
        jsonrpc::error_response(id, error)
    };
    match incoming {
        Incoming::Single(Message::Request { id, .. }) => session.send(&error(id)).await,
        Incoming::Batch(items) => {
            let (requests, others): (Vec<Message>, Vec<Message>) = items
                .into_iter()
                .partition(|m| matches!(m, Message::Request { .. }));
            if !others.is_empty() {
                session.feed(Incoming::Batch(others)).await;
            }
            let answers: Vec<Value> = requests
                .into_iter()
                .filter_map(|m| match m {
                    Message::Request { id, .. } => Some(error(id)),
                    _ => None,
                })
                .collect();
            if !answers.is_empty() {
                session.send(&Value::Array(answers)).await;
            }
        }
        other => session.feed(other).await,
    }
}

/// Feeds one line: `initialize` runs in its own task while reading goes on; what arrives
/// meanwhile is held (a `ping` passes). Returns `false` when `stop` resolved.
async fn feed_line(
    session: &Arc<Session>,
    line: Vec<u8>,
    init: &mut InitGate,
    stop: &mut Stop<'_>,
) -> bool {
    let incoming = match parse_line(line).await {
        Ok(incoming) => incoming,
        Err((id, error)) => {
            session.answer_parse_error(id, &error).await;
            return true;
        }
    };
    if InitGate::is_initialize(&incoming) && !init.is_running() {
        let session = session.clone();
        init.start(tokio::spawn(async move { session.feed(incoming).await }));
    } else if init.is_running() && !InitGate::may_pass(&incoming) {
        init.hold(incoming);
    } else {
        return feed_all(session, [incoming], stop).await;
    }
    true
}

/// Feeds messages in order; returns `false` when `stop` resolved first.
async fn feed_all(
    session: &Arc<Session>,
    messages: impl IntoIterator<Item = Incoming>,
    stop: &mut Stop<'_>,
) -> bool {
    for incoming in messages {
        tokio::select! {
            biased;
            _ = session.feed(incoming) => {}
            _ = &mut *stop => return false,
        }
    }
    true
}
