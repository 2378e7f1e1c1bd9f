//! An HTTP error answer of a remote server, read once: what the transport needs to say why a
//! request failed and whether a retry, a new session or OAuth could help.

use reqwest::StatusCode;

use super::answer::{text, Answer};

/// What an HTTP error answer says: its status, `Retry-After`, whether it asks for OAuth
/// (`WWW-Authenticate` with `resource_metadata`), and its text (or why it could not be read).
pub(super) struct ErrorAnswer {
    pub(super) status: StatusCode,
    pub(super) retry_after: Option<String>,
    pub(super) oauth: bool,
    pub(super) text: Result<String, String>,
}

impl ErrorAnswer {
    /// Reads the status, the two headers and the text of `resp`.
    pub(super) async fn read(resp: Answer) -> ErrorAnswer {
        let header = |name| {
            let v = resp.headers().get(name)?.to_str().ok()?;
            Some(v.to_owned())
        };
        let retry_after = header(reqwest::header::RETRY_AFTER);
        let oauth = header(reqwest::header::WWW_AUTHENTICATE)
            .is_some_and(|h| h.contains("resource_metadata"));
        let status = resp.status();
        let text = text(resp).await;
        ErrorAnswer {
            status,
            retry_after,
            oauth,
            text,
        }
    }

    /// Whether it says the server does not know our session: a 404, or a 400 whose text
    /// names the session (MCP 2025-11-25 "Transports: Streamable HTTP", session management).
    pub(super) fn names_the_session(&self) -> bool {
        match self.status {
            StatusCode::NOT_FOUND => true,
            StatusCode::BAD_REQUEST => self
                .text
                .as_ref()
                .is_ok_and(|t| t.to_ascii_lowercase().contains("session")),
            _ => false,
        }
    }
}
