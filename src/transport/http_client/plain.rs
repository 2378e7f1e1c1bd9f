//! The POSTs to a plain `http://` streamable-HTTP server, written straight to hyper's HTTP/1.1
//! client connections with a request target and header map built once per server.
//!
//! Why not reqwest here: per request it prints the `Uri` and parses it again as a `Url` (its
//! redirect layer), turns that `Url` back into a `Uri` and clones its header maps: about a
//! fifth of the proxy's instructions per remote call (BENCHMARKS.md, "Remote servers in both
//! protocol eras"). What reqwest gives that this path does not, and how it is kept:
//! * TLS: only `http://` URLs take this path; `https://` ones stay on reqwest (rustls);
//! * proxies: reqwest honours `HTTP_PROXY` / `ALL_PROXY` (either case); when one is set, every
//!   request stays on reqwest;
//! * user info in the URL (sent as HTTP Basic): such URLs stay on reqwest;
//! * redirects (same origin only, `http_auth.rs`): a 3xx answer here is sent again through
//!   reqwest, which follows it as before;
//! * connection reuse and `TCP_NODELAY`: kept here (below); no timeouts were configured.
//!
//! Connections: one POST at a time each (HTTP/1.1). A POST takes an open connection that is
//! ready for the next request, else opens one; the connection is offered again once the
//! answer's head came (it becomes ready when that answer's body has been read). A request the
//! server refused to take on a reused connection (it closed it while idle) is sent once more
//! on a new one, as reqwest's pool does. Dropping a POST's future before its answer ends
//! closes its connection (hyper), so a cancelled 2026-07-28 request still closes its stream.

use std::ffi::OsString;
use std::sync::Mutex;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST, USER_AGENT};
use http::{HeaderMap, HeaderValue, Method, Request, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use reqwest::Url;
use tracing::debug;

use super::answer::innermost;
use super::POST_ACCEPT;

/// Open connections kept for reuse at most; more are closed once their answer ends.
const MAX_KEPT: usize = 16;

type Sender = SendRequest<Full<Bytes>>;

/// How to POST to one plain `http://` endpoint.
pub(super) struct PlainHttp {
    /// `host:port`, resolved at each new connection.
    address: String,
    /// The request target in origin form (`/mcp?x=1`).
    target: Uri,
    /// `Host`, `User-Agent`, the credentials, `Content-Type` and `Accept`: every POST's.
    headers: HeaderMap,
    /// Open connections, in use or idle.
    open: Mutex<Vec<Sender>>,
}

impl PlainHttp {
    /// The plain path for `url` with `credentials` (the client's default headers), or `None`
    /// when the URL needs reqwest (see the module doc); `env` reads the process environment.
    pub(super) fn new(
        url: &Url,
        credentials: &HeaderMap,
        user_agent: &'static str,
        env: &dyn Fn(&str) -> Option<OsString>,
    ) -> Option<Self> {
        let plain = url.scheme() == "http" && url.username().is_empty() && url.password().is_none();
        if !plain || proxy_configured(env) {
            return None;
        }
        let host = url.host_str()?;
        let port = url.port_or_known_default()?;
        let host_header = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        let mut headers = credentials.clone();
        headers.insert(HOST, HeaderValue::try_from(host_header).ok()?);
        headers.insert(USER_AGENT, HeaderValue::from_static(user_agent));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static(POST_ACCEPT));
        Some(PlainHttp {
            address: format!("{host}:{port}"),
            target: Uri::try_from(target).ok()?,
            headers,
            open: Mutex::default(),
        })
    }

    /// The headers every POST carries, in a map with room for `more`.
    pub(super) fn headers(&self, more: usize) -> HeaderMap {
        let mut headers = HeaderMap::with_capacity(self.headers.len() + more);
        for (name, value) in &self.headers {
            headers.append(name.clone(), value.clone());
        }
        headers
    }

    /// POSTs `body` with `headers` (those of [`PlainHttp::headers`] and the POST's own);
    /// `Err` says why no answer came (`cannot connect: …`, or the innermost cause of a broken
    /// connection).
    pub(super) async fn post(
        &self,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<http::Response<Incoming>, String> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.target.clone();
        *request.headers_mut() = headers;
        let (mut sender, reused) = match self.take_ready() {
            Some(sender) => (sender, true),
            None => (self.connect().await?, false),
        };
        let answer = match sender.try_send_request(request).await {
            Ok(answer) => answer,
            Err(mut e) => match e.take_message() {
                Some(request) if reused => {
                    debug!(error = %innermost(e.error()), "idle connection closed; POST sent on a new one");
                    sender = self.connect().await?;
                    let answer = sender.send_request(request).await;
                    answer.map_err(|e| innermost(&e))?
                }
                _ => return Err(innermost(e.error())),
            },
        };
        self.keep(sender);
        Ok(answer)
    }

    /// An open connection ready for a request, if one is kept (closed ones are let go).
    fn take_ready(&self) -> Option<Sender> {
        let mut open = self.open.lock().unwrap();
        open.retain(|sender| !sender.is_closed());
        let ready = open.iter().position(Sender::is_ready)?;
        Some(open.swap_remove(ready))
    }

    /// Keeps `sender` for later requests, unless [`MAX_KEPT`] are kept already.
    fn keep(&self, sender: Sender) {
        let mut open = self.open.lock().unwrap();
        if open.len() < MAX_KEPT {
            open.push(sender);
        }
    }

    /// A new connection (`TCP_NODELAY`, as reqwest sets it), driven by a task of its own.
    async fn connect(&self) -> Result<Sender, String> {
        let stream = tokio::net::TcpStream::connect(&self.address)
            .await
            .map_err(|e| format!("cannot connect: {e}"))?;
        let _ = stream.set_nodelay(true);
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("cannot connect: {}", innermost(&e)))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                debug!(error = %innermost(&e), "HTTP connection ended");
            }
        });
        Ok(sender)
    }
}

/// Whether reqwest would send plain `http://` requests through a proxy: `HTTP_PROXY` or
/// `ALL_PROXY`, in either case, set and not empty (reqwest's system proxy, read from `env`).
fn proxy_configured(env: &dyn Fn(&str) -> Option<OsString>) -> bool {
    ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]
        .iter()
        .any(|name| env(name).is_some_and(|v| !v.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(url: &str) -> Option<PlainHttp> {
        PlainHttp::new(&Url::parse(url).unwrap(), &HeaderMap::new(), "ua", &|_| {
            None
        })
    }

    #[test]
    fn only_plain_http_urls_take_this_path() {
        let ok = plain("http://127.0.0.1:8080/mcp?x=1").unwrap();
        assert_eq!(ok.address, "127.0.0.1:8080");
        assert_eq!(ok.target, "/mcp?x=1");
        assert_eq!(ok.headers[HOST], "127.0.0.1:8080");
        let default_port = plain("http://example.com/mcp").unwrap();
        assert_eq!(default_port.address, "example.com:80");
        assert_eq!(default_port.headers[HOST], "example.com");
        let v6 = plain("http://[::1]:9/").unwrap();
        assert_eq!(v6.address, "[::1]:9");
        assert_eq!(v6.headers[HOST], "[::1]:9");
        assert!(plain("https://example.com/mcp").is_none());
        assert!(plain("http://user:secret@example.com/mcp").is_none());
        let proxied = |n: &str| (n == "HTTP_PROXY").then(|| "http://p:3128".into());
        let url = Url::parse("http://127.0.0.1:8080/mcp").unwrap();
        assert!(PlainHttp::new(&url, &HeaderMap::new(), "ua", &proxied).is_none());
    }

    #[test]
    fn a_configured_proxy_keeps_requests_on_reqwest() {
        let none = |_: &str| None;
        assert!(!proxy_configured(&none));
        let empty = |_: &str| Some(OsString::new());
        assert!(!proxy_configured(&empty));
        let lower = |n: &str| (n == "http_proxy").then(|| "http://p:3128".into());
        assert!(proxy_configured(&lower));
        let all = |n: &str| (n == "ALL_PROXY").then(|| "socks5://p".into());
        assert!(proxy_configured(&all));
    }
}
