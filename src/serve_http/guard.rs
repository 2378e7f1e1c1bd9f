//! Who may talk to the HTTP endpoint: the bind address rule, the `Origin` and `Host` checks
//! against DNS rebinding, and the bearer token. Pure functions over header values.
//!
//! Sources: MCP 2025-11-25 and 2026-07-28 "Streamable HTTP: Security" (servers MUST validate
//! `Origin` and answer an invalid one with 403; SHOULD bind only to localhost when local;
//! SHOULD authenticate; DNS rebinding protection); RFC 9112 §3.2 (`Host`: 400 when missing on
//! HTTP/1.1 or repeated; an absolute-form target's authority replaces it); RFC 9110 §15.5.20
//! (421 Misdirected Request); RFC 6750 §3 (`WWW-Authenticate: Bearer` on 401).

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use subtle::ConstantTimeEq;

/// Fewest characters (Unicode scalar values) a bearer token must have to serve an address that
/// is not loopback: a short token is guessed by a client that may try as often as it likes.
pub const MIN_TOKEN_CHARS: usize = 16;

/// Refuses to listen on `addr` when it is not a loopback address and no bearer `token` is
/// required, or the token is shorter than [`MIN_TOKEN_CHARS`] (MCP 2025-11-25 "Streamable HTTP:
/// Security": servers SHOULD authenticate connections). Errors name the address and the flag
/// that fixes it, never the token.
pub fn check_bind(addr: &SocketAddr, token: Option<&str>) -> Result<(), String> {
    if addr.ip().is_loopback() {
        return Ok(());
    }
    match token {
        Some(t) if t.chars().count() >= MIN_TOKEN_CHARS => Ok(()),
        Some(t) => Err(format!(
            "{addr} is not a loopback address: its bearer token (--auth-token-env) has {} \
             characters, fewer than the {MIN_TOKEN_CHARS} needed to serve beyond this machine",
            t.chars().count()
        )),
        None => Err(format!(
            "{addr} is not a loopback address: serving it needs --auth-token-env NAME (the \
             environment variable holding the bearer token clients must send, at least \
             {MIN_TOKEN_CHARS} characters)"
        )),
    }
}

/// Whether a request with this `Origin` header value may be served: no `Origin` (not a
/// browser), an `http`/`https` origin on a loopback host (any port; the same hosts as the
/// `Host` check: `localhost`, any IPv4 address in 127.0.0.0/8, `[::1]` in any spelling, and
/// 127.0.0.0/8 mapped into IPv6), or one of `allowed` (compared without case). `null` and
/// anything unparsable are refused.
pub fn origin_allowed(origin: Option<&str>, allowed: &[String]) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    let origin = origin.trim().to_ascii_lowercase();
    if allowed
        .iter()
        .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(&origin))
    {
        return true;
    }
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    authority_host(rest).is_some_and(is_loopback_name)
}

/// The value of `--allow-origin`, checked: `*` (or any wildcard) would let every page call the
/// endpoint, defeating the `Origin` check that protects it from DNS rebinding (MCP 2025-11-25
/// "Transports: Security Warning"), and `null` is the `Origin` of sandboxed frames and `file:`
/// pages, which any page can make; both are refused (a usage error, exit code 2). So is a
/// value that is not an origin, `http(s)://host[:port]` (a path, a list, no scheme), which no
/// browser's `Origin` could match. Returned as a browser writes it (RFC 6454 section 6.1):
/// lower case, no trailing `/`, no default port (`:443` for https, `:80` for http). Errors:
/// clap's message for the flag, saying what to give instead.
pub fn parse_allowed_origin(text: &str) -> Result<String, String> {
    let origin = text.trim();
    if origin.contains('*') {
        return Err(format!(
            "'{origin}' would allow pages of any origin to call the endpoint, which defeats its \
             Origin check (DNS rebinding protection); wildcards are not supported: give each \
             origin, such as https://app.example.com, with its own --allow-origin"
        ));
    }
    if origin.eq_ignore_ascii_case("null") {
        return Err(
            "'null' is the Origin of sandboxed frames and file: pages, which any page can \
             create, so it cannot be allowed; serve the page from an http(s) origin and allow \
             that one"
                .to_owned(),
        );
    }
    let lower = origin.trim_end_matches('/').to_ascii_lowercase();
    let (scheme, default_port) = match lower.split_once("://") {
        Some(("https", _)) => ("https", ":443"),
        Some(("http", _)) => ("http", ":80"),
        _ => ("", ""),
    };
    let authority = &lower[(scheme.len() + 3).min(lower.len())..];
    let plain = !authority.is_empty() && !authority.contains([',', ' ', '\t']);
    let host = authority_host(authority).filter(|h| !h.is_empty());
    // A port a browser can send: 1 to 65535.
    let port_ok = host.is_some_and(|h| {
        authority[h.len()..]
            .strip_prefix(':')
            .is_none_or(|p| p.parse::<u16>().is_ok_and(|n| n > 0))
    });
    if scheme.is_empty() || !plain || !port_ok {
        return Err(format!(
            "'{origin}' is not an origin a browser sends: give scheme://host[:port] with no \
             path, such as https://app.example.com, and one --allow-origin for each origin"
        ));
    }
    if !authority.is_ascii() {
        return Err(format!(
            "'{origin}' has a host that is not ASCII; a browser sends an internationalized host \
             in its punycode form (xn--…, RFC 5891): give that form"
        ));
    }
    let authority = authority.strip_suffix(default_port).unwrap_or(authority);
    Ok(format!("{scheme}://{authority}"))
}

/// Why a request to an endpoint bound to a loopback address is refused by its `Host` check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostRefusal {
    /// HTTP/1.1 without a `Host`, or more than one `Host`: 400 (RFC 9112 §3.2).
    Malformed,
    /// A `Host` (or absolute-form target) that does not name this machine: 421 Misdirected
    /// Request, the status for a request whose authority this server does not answer for
    /// (RFC 9110 §15.5.20): how a DNS rebinding page's requests arrive.
    Foreign,
}

impl HostRefusal {
    /// The HTTP status code of this refusal (400 or 421).
    pub fn status(self) -> u16 {
        match self {
            HostRefusal::Malformed => 400,
            HostRefusal::Foreign => 421,
        }
    }

    /// The JSON-RPC error message of this refusal.
    pub fn message(self) -> &'static str {
        match self {
            HostRefusal::Malformed => "a request needs exactly one Host header",
            HostRefusal::Foreign => {
                "this Host is not allowed: the endpoint is bound to a loopback address and \
                 answers only requests for localhost, 127.x.x.x or [::1] (DNS rebinding \
                 protection)"
            }
        }
    }
}

/// The `Host` check of an endpoint bound to a loopback address (DNS rebinding protection: a
/// browser page whose name was re-pointed at 127.0.0.1 still sends its own name as `Host`).
/// `target`: the authority of an absolute-form request target, which replaces `Host`
/// (RFC 9112 §3.2.2); `host`: the first `Host` value (`""` when not visible ASCII);
/// `repeated`: a second `Host` was sent; `host_required`: HTTP/1.1 or later (HTTP/1.0 has no
/// `Host`). Allowed: `localhost`, an IPv4 address in 127.0.0.0/8, `[::1]`, each with or
/// without a port, in any case.
pub fn host_refusal(
    target: Option<&str>,
    host: Option<&str>,
    repeated: bool,
    host_required: bool,
) -> Option<HostRefusal> {
    if repeated {
        return Some(HostRefusal::Malformed);
    }
    let Some(authority) = target.or(host) else {
        return host_required.then_some(HostRefusal::Malformed);
    };
    match authority_host(authority) {
        Some(name) if is_loopback_name(name) => None,
        _ => Some(HostRefusal::Foreign),
    }
}

/// Whether a host (as [`authority_host`] gives it) names this machine, in any case:
/// `localhost`, an IPv4 address in 127.0.0.0/8, or a bracketed loopback IPv6 address (`[::1]`,
/// or 127.0.0.0/8 mapped into IPv6).
fn is_loopback_name(host: &str) -> bool {
    if host == "127.0.0.1" || host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner
            .parse::<Ipv6Addr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback());
    }
    host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// The host of an authority (`host`, `host:port`, `[v6]` or `[v6]:port`) as written, an IPv6
/// address with its brackets. `None` when it carries a path, user info, query or fragment, a
/// port that is not digits, or an unclosed bracket.
fn authority_host(authority: &str) -> Option<&str> {
    // Bytes, not char patterns: this runs on every request (callgrind: the char searches were
    // two thirds of the check's ~830 instructions a request).
    let bytes = authority.as_bytes();
    if bytes.iter().any(|b| matches!(b, b'/' | b'@' | b'?' | b'#')) {
        return None;
    }
    let (host, port) = if bytes.first() == Some(&b'[') {
        let close = bytes.iter().position(|&b| b == b']')?;
        let port = &authority[close + 1..];
        if !port.is_empty() && !port.starts_with(':') {
            return None;
        }
        (&authority[..=close], port.get(1..))
    } else {
        match bytes.iter().position(|&b| b == b':') {
            Some(colon) => (&authority[..colon], Some(&authority[colon + 1..])),
            None => (authority, None),
        }
    };
    match port {
        Some(digits) if !is_port(digits) => None,
        _ => Some(host),
    }
}

/// A port number's digits.
fn is_port(digits: &str) -> bool {
    !digits.is_empty() && digits.len() <= 5 && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Whether an `Authorization` header value carries `token` as a bearer token. The token is
/// compared in constant time (only its length can be learnt from timing).
pub fn bearer_matches(authorization: Option<&str>, token: &str) -> bool {
    let Some(value) = authorization else {
        return false;
    };
    let Some((scheme, given)) = value.trim().split_once(' ') else {
        return false;
    };
    scheme.eq_ignore_ascii_case("bearer")
        && bool::from(given.trim().as_bytes().ct_eq(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_binds_freely_others_need_a_token() {
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let v6: SocketAddr = "[::1]:8080".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert!(check_bind(&local, None).is_ok());
        assert!(check_bind(&v6, None).is_ok());
        assert!(check_bind(&local, Some("short")).is_ok());
        let err = check_bind(&any, None).unwrap_err();
        assert!(err.contains("--auth-token-env"), "{err}");
        assert!(check_bind(&any, Some("sixteen-chars-ok")).is_ok());
        let err = check_bind(&any, Some("s3cr3")).unwrap_err();
        assert!(err.contains("5 characters, fewer than the 16"), "{err}");
        assert!(!err.contains("s3cr3"), "{err}");
        // Characters, not bytes: 15 two-byte letters are too few.
        assert!(check_bind(&any, Some(&"é".repeat(15))).is_err());
    }

    #[test]
    fn origins_of_this_machine_pass_foreign_ones_do_not() {
        let none: Vec<String> = vec![];
        assert!(origin_allowed(None, &none));
        for ok in [
            "http://localhost",
            "http://localhost:3000",
            "https://127.0.0.1:8443",
            "http://[::1]:5173",
            "HTTP://LOCALHOST:1",
        ] {
            assert!(origin_allowed(Some(ok), &none), "{ok}");
        }
        for bad in [
            "https://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.nip.io",
            "null",
            "http://localhost:abc",
            "http://user@localhost",
            "file://localhost",
            "http://[::2]:80",
        ] {
            assert!(!origin_allowed(Some(bad), &none), "{bad}");
        }
        let listed = vec!["https://app.example.com".to_owned()];
        assert!(origin_allowed(Some("https://app.example.com"), &listed));
        assert!(!origin_allowed(
            Some("https://app.example.com.evil"),
            &listed
        ));
    }

    /// Every loopback spelling of an origin's host counts as this machine (before, only
    /// `localhost`, `127.0.0.1` and `[::1]` did); look-alikes on other hosts do not.
    #[test]
    fn any_loopback_origin_host_passes_and_look_alikes_do_not() {
        let cases = [
            ("http://localhost", true),
            ("http://LocalHost:3000", true),
            ("http://127.0.0.1", true),
            ("http://127.0.0.2:8080", true),
            ("https://127.8.9.10", true),
            ("http://127.255.255.255:1", true),
            ("http://[::1]", true),
            ("http://[0:0:0:0:0:0:0:1]:5173", true),
            ("https://[0000::0001]", true),
            ("http://[::ffff:127.0.0.1]:80", true),
            ("http://[::FFFF:7F00:2]", true),
            ("http://127.0.0.1.evil.com", false),
            ("http://localhost.evil.com", false),
            ("http://evil.localhost.com:80", false),
            ("http://[::2]", false),
            ("http://[::]", false),
            ("http://[::ffff:128.0.0.1]", false),
            ("http://128.0.0.1", false),
            ("http://0.0.0.0", false),
            ("http://126.255.255.255", false),
            ("http://127.1", false),
            ("http://127.0.0.1:99999999", false),
            ("http://[::1]@evil.com", false),
            ("http://[::1", false),
            ("ws://127.0.0.2", false),
        ];
        let none: Vec<String> = vec![];
        for (origin, loopback) in cases {
            assert_eq!(origin_allowed(Some(origin), &none), loopback, "{origin}");
        }
    }

    /// `--allow-origin '*'` and `--allow-origin null` were accepted: `null` then let a
    /// sandboxed page call the endpoint. Both are refused, saying why; a real origin passes.
    #[test]
    fn a_wildcard_or_null_allowed_origin_is_refused() {
        for bad in ["*", " * ", "https://*.example.com", "null", "NULL"] {
            let err = parse_allowed_origin(bad).unwrap_err();
            assert!(err.contains("Origin"), "{bad}: {err}");
        }
        assert!(parse_allowed_origin("*")
            .unwrap_err()
            .contains("any origin"));
        assert!(parse_allowed_origin("null")
            .unwrap_err()
            .contains("sandboxed"));
        let ok = parse_allowed_origin("https://app.example.com").unwrap();
        assert_eq!(ok, "https://app.example.com");
    }

    /// Values no browser `Origin` can match were accepted silently (fresh-user tester): they
    /// are refused, and the spellings of one origin are written as a browser sends it.
    #[test]
    fn an_allowed_origin_is_checked_and_written_as_a_browser_sends_it() {
        for (given, want) in [
            ("https://APP.example.com:443", "https://app.example.com"),
            ("https://app.example.com/", "https://app.example.com"),
            ("http://app.example.com:80", "http://app.example.com"),
            ("http://app.example.com:8080", "http://app.example.com:8080"),
            ("https://[::1]:8443", "https://[::1]:8443"),
        ] {
            assert_eq!(parse_allowed_origin(given).unwrap(), want, "{given}");
        }
        for bad in [
            "app.example.com",
            "https://a.com,https://b.com",
            "javascript:alert(1)",
            "file://",
            "https://app.example.com/path",
            "https://user@app.example.com",
            "ftp://app.example.com",
            "https://app.example.com:port",
            "https://app.example.com:0",
            "https://app.example.com:99999",
        ] {
            let err = parse_allowed_origin(bad).unwrap_err();
            assert!(err.contains("scheme://host[:port]"), "{bad}: {err}");
        }
        let err = parse_allowed_origin("https://ünï.example").unwrap_err();
        assert!(err.contains("punycode"), "{err}");
        assert!(parse_allowed_origin("https://xn--n-eha6c.example:65535").is_ok());
        assert!(origin_allowed(
            Some("https://app.example.com"),
            &[parse_allowed_origin("https://App.Example.com:443").unwrap()]
        ));
    }

    #[test]
    fn hosts_naming_this_machine_pass_others_are_misdirected() {
        for ok in [
            "localhost",
            "localhost:8080",
            "LOCALHOST:1",
            "127.0.0.1",
            "127.0.0.1:3000",
            "127.8.9.10:80",
            "[::1]",
            "[::1]:8080",
            "[::ffff:127.0.0.1]:80",
        ] {
            assert_eq!(host_refusal(None, Some(ok), false, true), None, "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "128.0.0.1",
            "0.0.0.0:80",
            "10.0.0.5",
            "[::2]:80",
            "::1",
            "localhost:abc",
            "user@localhost",
            "localhost/x",
            "[::1",
            "",
        ] {
            let refusal = host_refusal(None, Some(bad), false, true);
            assert_eq!(refusal, Some(HostRefusal::Foreign), "{bad}");
        }
        assert_eq!(HostRefusal::Foreign.status(), 421);
    }

    #[test]
    fn a_missing_or_repeated_host_is_malformed_and_a_target_authority_wins() {
        let malformed = Some(HostRefusal::Malformed);
        assert_eq!(host_refusal(None, None, false, true), malformed);
        assert_eq!(host_refusal(None, None, false, false), None, "HTTP/1.0");
        assert_eq!(host_refusal(None, Some("localhost"), true, true), malformed);
        assert_eq!(HostRefusal::Malformed.status(), 400);
        let evil = Some("evil.example");
        let foreign = Some(HostRefusal::Foreign);
        assert_eq!(host_refusal(evil, Some("127.0.0.1"), false, true), foreign);
        assert_eq!(host_refusal(Some("localhost:9"), evil, false, true), None);
    }

    #[test]
    fn only_the_exact_bearer_token_passes() {
        assert!(bearer_matches(Some("Bearer s3cret"), "s3cret"));
        assert!(bearer_matches(Some("bearer s3cret"), "s3cret"));
        assert!(!bearer_matches(Some("Bearer s3cre"), "s3cret"));
        assert!(!bearer_matches(Some("Bearer s3crett"), "s3cret"));
        assert!(!bearer_matches(Some("Basic s3cret"), "s3cret"));
        assert!(!bearer_matches(Some("s3cret"), "s3cret"));
        assert!(!bearer_matches(None, "s3cret"));
    }
}
