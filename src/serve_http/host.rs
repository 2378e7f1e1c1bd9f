//! What the HTTP server needs of the proxy: a way to open one client session and exchange
//! JSON-RPC messages with it ([`Host`]), and [`CoreHost`], the proxy's sessions over one shared
//! core (one set of servers for every client).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::proxy::{Core, SessionOutput};

/// Messages queued towards a session before a POST waits.
const INPUT_QUEUE: usize = 256;
/// How long a closed session's request tasks get to end after it drained.
const SETTLE: Duration = Duration::from_secs(2);

/// One open client session: messages in, messages out.
pub struct SessionIo {
    /// Each item is one JSON-RPC message from the client as JSON text (no newline). Dropping
    /// every sender ends the session the way end of input ends a stdio session: what is in
    /// flight is finished, then the session is closed.
    pub input: mpsc::Sender<Vec<u8>>,
    /// Each item is one message the session sends to its client, as JSON text (a trailing
    /// newline is allowed); it ends when the session has ended.
    pub output: mpsc::Receiver<Vec<u8>>,
    /// Completes when the session has finished its work.
    pub finished: tokio::task::JoinHandle<()>,
}

/// Opens client sessions for the HTTP server: one per legacy (2025-era) client, and one shared
/// by the stateless 2026-07-28 requests.
pub trait Host: Send + Sync + 'static {
    /// Opens a new session.
    fn open(&self) -> SessionIo;
}

/// The proxy's client sessions over one shared [`Core`]: every client uses the same servers.
pub struct CoreHost {
    core: Arc<Core>,
}

impl CoreHost {
    /// A host whose sessions run over `core`.
    pub fn new(core: Arc<Core>) -> CoreHost {
        CoreHost { core }
    }
}

impl Host for CoreHost {
    fn open(&self) -> SessionIo {
        let (lines, output) = mpsc::channel(crate::proxy::OUTPUT_QUEUE);
        let session = self.core.open_session(SessionOutput { lines, gate: None });
        let (input, mut received) = mpsc::channel::<Vec<u8>>(INPUT_QUEUE);
        let max = self.core.config().max_message_bytes();
        let finished = tokio::spawn(async move {
            while let Some(line) = received.recv().await {
                if line.len() > max {
                    session
                        .reject_too_long(line.len(), &line[..line.len().min(4096)])
                        .await;
                } else {
                    session.feed_line(line).await;
                }
            }
            session.close().await;
            session.settle(SETTLE).await;
        });
        SessionIo {
            input,
            output,
            finished,
        }
    }
}
