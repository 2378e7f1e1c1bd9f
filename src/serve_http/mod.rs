//! `serve --http`: the proxy served over MCP's streamable HTTP transport at one endpoint, `/mcp`,
//! in both protocol eras (MCP 2025-11-25 "Transports: Streamable HTTP"; 2026-07-28 "Streamable
//! HTTP").
//!
//! - A 2025-era client opens a session with `initialize` and gets an `Mcp-Session-Id`
//!   (128 random bits from the operating system, hex); each is its own proxy session over the
//!   one set of servers every client shares.
//! - A 2026-07-28 client is served statelessly: every request carries its `_meta`, no session
//!   id is minted, so replicas behind a load balancer answer alike.
//! - Who may connect: loopback binds by default; any other address needs a bearer token
//!   ([`guard`]); a foreign `Origin` is refused with 403; on a loopback bind a `Host` not naming
//!   this machine with 421 (DNS rebinding); bodies above the limit get 413, bodies slower
//!   than [`HttpOptions::body_timeout`] 408; headers slower than
//!   [`HttpOptions::header_timeout`] lose the connection ([`listen`]). Pages on the
//!   allowed origins get CORS ([`layers`]).
//! - A 2025-era session idle (no request in flight, no GET stream open) for
//!   [`HttpOptions::session_idle`] is ended, and its id answered with 404 from then on; at most
//!   [`HttpOptions::max_sessions`] are live, an `initialize` beyond that replaces the idle
//!   session used longest ago, or gets 503 with `Retry-After` when all are busy ([`sessions`]).
//! - On the stop signal the endpoint keeps accepting connections but answers every new request
//!   with 503, `Retry-After` and a JSON-RPC error, GET streams end, every session finishes what
//!   is in flight (up to [`DRAIN`]), then the listener closes.
//!
//! Files: [`channel`] routes one session's messages to HTTP responses, [`handlers`] serves
//! POST/GET/DELETE, [`batch`] a 2025-03-26 session's batches, [`headers`] checks the MCP request headers, [`guard`] the bind address,
//! `Origin` and token, [`layers`] applies them and CORS, [`host`] opens sessions ([`CoreHost`]: the proxy's sessions over one
//! shared core).

mod batch;
mod channel;
mod guard;
mod handlers;
mod headers;
mod host;
mod layers;
mod listen;
mod sessions;
mod splice;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_cors;
#[cfg(test)]
mod tests_host;
#[cfg(test)]
mod tests_lifecycle;
#[cfg(test)]
mod tests_timeouts;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use channel::Channel;
pub use guard::{check_bind, parse_allowed_origin};
pub use host::{CoreHost, Host};
use sessions::{Full, SessionLimits, Sessions};

/// The default request body limit: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// How long in-flight work gets after the stop signal before connections are dropped.
pub const DRAIN: Duration = Duration::from_secs(10);
/// The default idle limit of a 2025-era session: 30 minutes, in seconds.
pub const DEFAULT_SESSION_IDLE_SECS: u64 = 1800;
/// The default number of 2025-era sessions live at once.
pub const DEFAULT_MAX_SESSIONS: usize = 256;
/// The default time a client has to send a request's body once its headers are in, in
/// seconds (`--body-timeout-secs`).
pub const DEFAULT_BODY_TIMEOUT_SECS: u64 = 30;
/// The time a client has to send a request's headers, in seconds (hyper's
/// `header_read_timeout`, [`listen`]).
pub const HEADER_TIMEOUT_SECS: u64 = 30;
/// The `Retry-After` of a 503 (shutting down, or too many sessions), in seconds.
pub const RETRY_AFTER_SECS: u64 = 5;

/// The `serve` flags for HTTP.
#[derive(Debug, Clone, clap::Args)]
pub struct HttpArgs {
    /// Serve MCP over streamable HTTP at this address, path /mcp (for example 127.0.0.1:8080;
    /// port 0 picks a free one), instead of over stdin/stdout.
    #[arg(long, value_name = "ADDR", value_parser = parse_listen_addr)]
    pub http: Option<SocketAddr>,
    /// The environment variable holding a bearer token every HTTP request must carry
    /// (`Authorization: Bearer TOKEN`); required to bind an address that is not loopback.
    #[arg(long, value_name = "NAME", requires = "http")]
    pub auth_token_env: Option<String>,
    /// An extra browser origin allowed to call the endpoint (for example
    /// https://app.example.com); origins on localhost are always allowed. Repeatable. `*` and
    /// `null` are refused.
    #[arg(long, value_name = "ORIGIN", requires = "http", value_parser = parse_allowed_origin)]
    pub allow_origin: Vec<String>,
    /// The largest request body accepted, in bytes; a larger one is answered with 413.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_body_bytes: usize,
    /// The most seconds a client may take to send a request's body once its headers are in;
    /// a slower one is answered with 408 and its connection closed.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_BODY_TIMEOUT_SECS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub body_timeout_secs: u64,
    /// End a client session (2025-era clients, Mcp-Session-Id) after this many seconds with no
    /// request in flight and no GET stream open; its later requests get 404, so the client
    /// opens a new session.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_SESSION_IDLE_SECS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub session_idle_secs: u64,
    /// The most client sessions (2025-era clients) live at once. A new one beyond it replaces
    /// the idle session used longest ago; when every session is busy it gets 503 with
    /// Retry-After.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_SESSIONS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_sessions: usize,
}

/// What the HTTP endpoint enforces.
#[derive(Clone)]
pub struct HttpOptions {
    /// The bearer token requests must carry, when one is required.
    pub auth_token: Option<String>,
    /// Browser origins allowed besides localhost ones.
    pub allowed_origins: Vec<String>,
    /// The request body limit in bytes.
    pub max_body_bytes: usize,
    /// How long a request's body may take to arrive once its headers are in (else 408).
    pub body_timeout: Duration,
    /// How long a request's headers may take to arrive (else the connection is closed).
    pub header_timeout: Duration,
    /// How long a 2025-era session may be idle before it is ended.
    pub session_idle: Duration,
    /// The most 2025-era sessions live at once.
    pub max_sessions: usize,
}

impl Default for HttpOptions {
    /// No token, no extra origins, and the defaults of the flags.
    fn default() -> HttpOptions {
        HttpOptions {
            auth_token: None,
            allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            body_timeout: Duration::from_secs(DEFAULT_BODY_TIMEOUT_SECS),
            header_timeout: Duration::from_secs(HEADER_TIMEOUT_SECS),
            session_idle: Duration::from_secs(DEFAULT_SESSION_IDLE_SECS),
            max_sessions: DEFAULT_MAX_SESSIONS,
        }
    }
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("auth_token", &self.auth_token.as_ref().map(|_| "<set>"))
            .field("allowed_origins", &self.allowed_origins)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("body_timeout", &self.body_timeout)
            .field("header_timeout", &self.header_timeout)
            .field("session_idle", &self.session_idle)
            .field("max_sessions", &self.max_sessions)
            .finish()
    }
}

impl HttpArgs {
    /// The address and options these flags ask for, with the token read from its environment
    /// variable. Errors (for exit code 2): the variable unset or empty, or an address that is
    /// not loopback without a token of at least [`guard::MIN_TOKEN_CHARS`] characters.
    pub fn resolve(&self) -> Result<Option<(SocketAddr, HttpOptions)>, String> {
        let Some(addr) = self.http else {
            return Ok(None);
        };
        let auth_token = match &self.auth_token_env {
            Some(name) => match std::env::var(name) {
                Ok(token) if !token.trim().is_empty() => Some(token.trim().to_owned()),
                _ => {
                    return Err(format!(
                        "--auth-token-env: the environment variable {name} is not set or empty"
                    ))
                }
            },
            None => None,
        };
        check_bind(&addr, auth_token.as_deref())?;
        let options = HttpOptions {
            auth_token,
            allowed_origins: self.allow_origin.clone(),
            max_body_bytes: self.max_body_bytes,
            body_timeout: Duration::from_secs(self.body_timeout_secs),
            header_timeout: Duration::from_secs(HEADER_TIMEOUT_SECS),
            session_idle: Duration::from_secs(self.session_idle_secs),
            max_sessions: self.max_sessions,
        };
        Ok(Some((addr, options)))
    }
}

/// The server's shared state.
pub(crate) struct App {
    host: Arc<dyn Host>,
    options: HttpOptions,
    /// The listener is bound to a loopback address: requests must name this machine as `Host`.
    loopback: bool,
    sessions: Mutex<Sessions<Channel>>,
    stateless: Mutex<Option<Arc<Channel>>>,
    closing: watch::Sender<bool>,
    finished: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl App {
    fn new(host: Arc<dyn Host>, options: HttpOptions, loopback: bool) -> App {
        let limits = SessionLimits {
            idle: options.session_idle,
            max: options.max_sessions,
        };
        App {
            host,
            options,
            loopback,
            sessions: Mutex::new(Sessions::new(limits)),
            stateless: Mutex::new(None),
            closing: watch::channel(false).0,
            finished: Mutex::new(Vec::new()),
        }
    }

    fn open(&self, shared: bool) -> Arc<Channel> {
        let (channel, finished) = Channel::start(self.host.open(), shared);
        let mut all = self.finished.lock().unwrap();
        all.retain(|f| !f.is_finished());
        all.push(finished);
        drop(all);
        if self.is_closing() {
            channel.close();
        }
        channel
    }

    /// Opens a legacy session under a new id, in place of the idle session used longest ago
    /// when the limit is reached; [`Full`] when every live session is busy.
    fn open_session(&self) -> Result<(String, Arc<Channel>), Full> {
        let evicted = self.sessions.lock().unwrap().admit()?;
        if let Some(evicted) = evicted {
            info!(
                max_sessions = self.options.max_sessions,
                "session limit reached: the idle session used longest ago is ended"
            );
            evicted.close();
        }
        let id = unguessable();
        let channel = self.open(false);
        let mut sessions = self.sessions.lock().unwrap();
        sessions.insert(id.clone(), channel.clone(), Instant::now());
        Ok((id, channel))
    }

    /// The live legacy session `id`, marked used (one that ended or expired is forgotten).
    fn session(&self, id: &str) -> Option<Arc<Channel>> {
        self.sessions.lock().unwrap().get(id, Instant::now())
    }

    fn end_session(&self, id: &str) {
        if let Some(channel) = self.sessions.lock().unwrap().remove(id) {
            channel.close();
        }
    }

    /// Ends the sessions idle for the limit, every [`SessionLimits::sweep_every`] until the
    /// stop signal.
    async fn expire_idle_sessions(&self) {
        let every = self.sessions.lock().unwrap().limits().sweep_every();
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = closed(self.closing_signal()) => return,
            }
            let expired = self.sessions.lock().unwrap().sweep(Instant::now());
            for channel in &expired {
                channel.close();
            }
            if !expired.is_empty() {
                debug!(sessions = expired.len(), "idle sessions ended");
            }
        }
    }

    /// The session shared by stateless requests, opened on first use.
    fn stateless(&self) -> Arc<Channel> {
        let mut slot = self.stateless.lock().unwrap();
        match slot.as_ref().filter(|c| !c.is_closed()) {
            Some(channel) => channel.clone(),
            None => slot.insert(self.open(true)).clone(),
        }
    }

    fn is_closing(&self) -> bool {
        *self.closing.borrow()
    }

    fn closing_signal(&self) -> watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// The stop signal arrived: refuse new requests, end GET streams, close every session.
    fn begin_close(&self) {
        self.closing.send_replace(true);
        for channel in self.sessions.lock().unwrap().drain() {
            channel.close();
        }
        if let Some(channel) = self.stateless.lock().unwrap().take() {
            channel.close();
        }
    }
}

/// Completes once `closing` holds `true` (or its sender is gone).
pub(crate) async fn closed(mut closing: watch::Receiver<bool>) {
    while !*closing.borrow_and_update() {
        if closing.changed().await.is_err() {
            return;
        }
    }
}

/// 128 bits from the operating system's random source, as 32 hex digits (visible ASCII, as
/// MCP 2025-11-25 "Session Management" requires of a session id): unguessable, for session ids
/// and the wire ids of stateless clients' `tools/call`s.
///
/// # Panics
/// When the operating system's random source fails (getrandom(2); it does not once ready).
pub(crate) fn unguessable() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system's random source is available");
    envelope_core::mrtr::hex(&bytes)
}

/// The address `--http` listens on: an IP address and port (`127.0.0.1:8080`, `[::1]:8080`,
/// `0.0.0.0:8080`), or `localhost:PORT`, which listens on 127.0.0.1 (the name every system
/// resolves to the IPv4 loopback; MCP clients connect to `http://localhost:PORT/mcp` as well).
/// Other host names are refused rather than resolved: which address of a name gets bound would
/// depend on the resolver, and the bind rule (loopback, or a token) must be decided on the
/// address. Errors: clap's message for the flag, saying what to write instead.
pub fn parse_listen_addr(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let port_of = |host: &str| {
        text.rsplit_once(':')
            .filter(|(h, _)| h.eq_ignore_ascii_case(host))
            .and_then(|(_, port)| port.parse::<u16>().ok())
    };
    match port_of("localhost") {
        Some(port) => Ok(SocketAddr::from(([127, 0, 0, 1], port))),
        None => Err(format!(
            "expected an IP address and port, such as 127.0.0.1:8080, [::1]:8080, \
             0.0.0.0:8080 or localhost:8080, not '{text}' (host names other than localhost are \
             not resolved)"
        )),
    }
}

/// Serves the endpoint on `listener` with sessions from `host` until `stop` completes, then
/// drains (see the module documentation) and returns once every session has stopped and every
/// answer is sent, or [`DRAIN`] after `stop`.
pub async fn serve(
    listener: TcpListener,
    host: Arc<dyn Host>,
    options: HttpOptions,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let loopback = listener.local_addr()?.ip().to_canonical().is_loopback();
    let app = Arc::new(App::new(host, options, loopback));
    let (halt, halted) = tokio::sync::oneshot::channel::<()>();
    let router = layers::router(app.clone());
    let header_timeout = app.options.header_timeout;
    let server = listen::serve_connections(listener, router, header_timeout, halted);
    let mut served = tokio::spawn(server);
    let expiring = app.clone();
    tokio::spawn(async move { expiring.expire_idle_sessions().await });
    tokio::select! {
        result = &mut served => return result.map_err(std::io::Error::other)?,
        _ = stop => {}
    }
    info!("stopping: finishing requests in flight; new requests get 503");
    let deadline = tokio::time::Instant::now() + DRAIN;
    app.begin_close();
    let finished: Vec<_> = std::mem::take(&mut *app.finished.lock().unwrap());
    for session in finished {
        let _ = tokio::time::timeout_at(deadline, session).await;
    }
    let _ = halt.send(());
    match tokio::time::timeout_at(deadline, &mut served).await {
        Ok(result) => result.map_err(std::io::Error::other)?,
        Err(_) => {
            warn!(
                "connections still open {}s after the stop signal; closing them",
                DRAIN.as_secs()
            );
            served.abort();
            Ok(())
        }
    }
}

/// Serves the proxy on `listener` (bound by the caller, so that an address in use is its
/// error to word) until `stop`: one shared core whose servers are started at once (declaring
/// every client capability the proxy can route), one session per client; then the servers are
/// stopped. The address actually bound is logged (`serving MCP over HTTP at http://ADDR/mcp`).
pub async fn run(
    listener: TcpListener,
    options: HttpOptions,
    config: Arc<crate::config::Config>,
    transcript: Option<crate::transcript::TranscriptWriter>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let bound = listener.local_addr()?;
    let core = crate::proxy::Core::new(config, transcript);
    core.watch_config();
    let starting = core.clone();
    tokio::spawn(async move {
        let client = crate::proxy::Core::routable_client_init();
        starting.start_servers(client).await;
    });
    info!("serving MCP over HTTP at http://{bound}/mcp");
    let served = serve(
        listener,
        Arc::new(CoreHost::new(core.clone())),
        options,
        stop,
    )
    .await;
    core.shutdown().await;
    core.flush_transcript();
    served
}
