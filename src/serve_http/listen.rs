//! The accept loop: each TCP connection served by hyper's HTTP/1 server with a deadline for
//! a request's headers, and closed gracefully when the endpoint stops.
//!
//! `axum::serve` gives hyper no timer, so hyper's `header_read_timeout` never fired: a client
//! could hold a connection open forever by sending a request's headers a byte at a time
//! (slowloris), or open connections and send nothing. Here hyper gets tokio's timer and
//! [`HttpOptions::header_timeout`]; a client that has not sent a request's whole head within
//! it (counted from the connection's opening, or on a kept-alive connection from the previous
//! answer) loses the connection, without an answer (hyper's behaviour). The body has its own deadline ([`HttpOptions::body_timeout`], read in
//! [`super::handlers`]).

use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;
use tracing::{error, trace};

/// Serves `router` on every connection `listener` accepts until `halt` completes; then stops
/// accepting, asks each open connection to finish its request in flight and close, and returns
/// once all have. `header_timeout`: the longest a client may take to send a request's head.
pub(super) async fn serve_connections(
    listener: TcpListener,
    router: Router,
    header_timeout: Duration,
    halt: oneshot::Receiver<()>,
) -> std::io::Result<()> {
    let (stopping, stop_signal) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(halt);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut halt => break,
        };
        // Reap the finished connections so the set holds only open ones.
        while connections.try_join_next().is_some() {}
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                accept_failed(&e).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let stop_signal = stop_signal.clone();
        connections.spawn(async move {
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                _ = super::closed(stop_signal) => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = result {
                trace!("connection ended: {e}");
            }
        });
    }
    drop(listener);
    stopping.send_replace(true);
    while connections.join_next().await.is_some() {}
    Ok(())
}

/// After an accept error: one about a single connection (refused, aborted, reset) is
/// skipped; any other (the process is out of file descriptors) is logged and accepting pauses
/// for a second, so that connections can close meanwhile, rather than spinning.
async fn accept_failed(e: &std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    ) {
        return;
    }
    error!("accepting a connection failed: {e}; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}
