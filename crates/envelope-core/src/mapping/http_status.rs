//! The error path of a remote server's HTTP error status ([`super::Outcome::HttpStatus`]).
//!
//! | status | error type | message |
//! |---|---|---|
//! | 401, 403 | `unavailable` | `server 'S' refused the request: HTTP 401 Unauthorized: <detail>` |
//! | 429 | `rate_limit` | `server 'S' is rate limited (HTTP 429 Too Many Requests); retry after 7 s` |
//! | 503 | `overloaded` | `server 'S' is overloaded (HTTP 503 Service Unavailable); retry after 7 s` |
//! | any other | `server_error` | `server 'S' answered HTTP 500 Internal Server Error: <detail>` |
//!
//! `Retry-After` (RFC 9110 section 10.2.3) is given in seconds or as an HTTP date; either is
//! repeated as sent (`retry after 7 s`, `retry after Wed, 21 Oct 2026 07:28:00 GMT`), and the
//! clause is left out when the header is absent. Sources: RFC 9110 section 15 (status codes),
//! RFC 6585 section 4 (429); the MCP specification 2025-11-25, "Transports: Streamable HTTP".

use super::{error_mapped, ErrorType, Mapped, MappingContext};

/// `401 Unauthorized`, `429 Too Many Requests`, ...; just the number for an unknown status.
pub(crate) fn status_text(status: u16) -> String {
    let reason = http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason());
    match reason {
        Some(r) => format!("{status} {r}"),
        None => status.to_string(),
    }
}

/// `; retry after 7 s` (seconds), `; retry after <date>` (an HTTP date), or nothing.
fn retry_clause(retry_after: Option<&str>) -> String {
    match retry_after.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) if r.bytes().all(|b| b.is_ascii_digit()) => format!("; retry after {r} s"),
        Some(r) => format!("; retry after {r}"),
        None => String::new(),
    }
}

/// Maps an HTTP error status of a remote server to the error envelope (see the module table).
pub(super) fn map_http_status(
    ctx: &MappingContext<'_>,
    status: u16,
    retry_after: Option<&str>,
    detail: &str,
) -> Mapped {
    let server = ctx.server;
    let text = status_text(status);
    let retry = retry_clause(retry_after);
    match status {
        401 | 403 => error_mapped(
            ctx,
            ErrorType::Unavailable,
            [
                &format!("server '{server}' refused the request: HTTP {text}: "),
                detail,
            ],
        ),
        429 => error_mapped(
            ctx,
            ErrorType::RateLimit,
            [format!("server '{server}' is rate limited (HTTP {text}){retry}").as_str()],
        ),
        503 => error_mapped(
            ctx,
            ErrorType::Overloaded,
            [format!("server '{server}' is overloaded (HTTP {text}){retry}").as_str()],
        ),
        _ => error_mapped(
            ctx,
            ErrorType::ServerError,
            [&format!("server '{server}' answered HTTP {text}: "), detail],
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::mapping::{map_outcome, MappingContext, MediaMode, Outcome};
    use serde_json::json;

    fn map(outcome: &Outcome) -> (String, String, bool) {
        let ctx = MappingContext {
            call_id: "1",
            tool: "t",
            server: "docs",
            budget: crate::budget::Budget::chars(2000),
            text: crate::mapping::TextShape::default(),
            media: MediaMode::Passthrough,
        };
        let env = map_outcome(outcome, &ctx).envelope;
        let kind = env.content.split(':').next().unwrap().to_owned();
        (kind, env.content, env.retryable)
    }

    fn http(status: u16, retry_after: Option<&str>, detail: &str) -> Outcome {
        Outcome::HttpStatus {
            status,
            retry_after: retry_after.map(str::to_owned),
            detail: detail.into(),
        }
    }

    #[test]
    fn statuses_map_to_their_error_types() {
        let (kind, content, retryable) = map(&http(
            401,
            None,
            "it rejected the bearer token from $T (bearer_token_env_var)",
        ));
        assert_eq!((kind.as_str(), retryable), ("unavailable", false));
        assert_eq!(content, "unavailable: server 'docs' refused the request: HTTP 401 Unauthorized: it rejected the bearer token from $T (bearer_token_env_var)");
        assert_eq!(map(&http(403, None, "x")).0, "unavailable");
        let (kind, content, retryable) = map(&http(429, Some("7"), "ignored"));
        assert_eq!((kind.as_str(), retryable), ("rate_limit", true));
        assert_eq!(content, "rate_limit: server 'docs' is rate limited (HTTP 429 Too Many Requests); retry after 7 s");
        let (kind, content, _) = map(&http(503, Some("Wed, 21 Oct 2026 07:28:00 GMT"), ""));
        assert_eq!(kind, "overloaded");
        assert!(
            content.ends_with(
                "(HTTP 503 Service Unavailable); retry after Wed, 21 Oct 2026 07:28:00 GMT"
            ),
            "{content}"
        );
        assert!(map(&http(503, None, "")).1.ends_with("Unavailable)"));
        let (kind, content, retryable) = map(&http(500, None, "boom"));
        assert_eq!((kind.as_str(), retryable), ("server_error", true));
        assert_eq!(
            content,
            "server_error: server 'docs' answered HTTP 500 Internal Server Error: boom"
        );
        assert!(map(&http(599, None, "x")).1.contains("HTTP 599: x"));
        let (kind, content, retryable) = map(&Outcome::ConnectionFailed {
            detail: "connection refused".into(),
        });
        assert_eq!((kind.as_str(), retryable), ("server_error", true));
        assert!(content.ends_with(
            "the connection to server 'docs' failed during the call: connection refused"
        ));
    }

    #[test]
    fn new_kinds_round_trip_and_old_records_still_read() {
        for o in [
            http(429, Some("3"), "d"),
            http(401, None, "d"),
            Outcome::ConnectionFailed {
                detail: "reset".into(),
            },
        ] {
            let text = serde_json::to_string(&o).unwrap();
            assert_eq!(serde_json::from_str::<Outcome>(&text).unwrap(), o);
        }
        assert_eq!(
            serde_json::to_value(http(401, None, "d")).unwrap(),
            json!({"kind": "http_status", "status": 401, "detail": "d"})
        );
        let old: Outcome =
            serde_json::from_value(json!({"kind": "timeout", "timeout_ms": 5})).unwrap();
        assert_eq!(
            old,
            Outcome::Timeout {
                timeout_ms: 5,
                timeout_ns: None
            }
        );
    }
}
