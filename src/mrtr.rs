//! Multi-round-trip requests across the protocol eras: the pure rules of
//! [`envelope_core::mrtr`], plus [`new_state`], which draws the random bits of a `requestState`
//! from the operating system.

pub use envelope_core::mrtr::*;

/// A fresh `requestState` of ours: [`STATE_PREFIX`] and 128 random bits from the operating
/// system's generator (getrandom(2)) in hex ([`state_from`]), unguessable, meaningful only as a
/// key of our table.
///
/// # Panics
/// When getrandom(2) fails (it does not, for 16 bytes, once the system's pool is ready).
pub fn new_state() -> String {
    let mut bytes = [0u8; 16];
    // SAFETY: getrandom(2) writes at most `len` bytes into the buffer we own.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    assert_eq!(n, bytes.len() as isize, "getrandom failed");
    state_from(bytes)
}

/// The `inputResponses` of one round for a 2025 client (MCP 2026-07-28 "Basic: Patterns: Multi
/// Round-Trip Requests: Client Requirements": one response per key of `inputRequests`): each of
/// `requests` answered by `ask`, one after another, under its key. The first `Err` ends the
/// round and is returned. Shared by `tools/call` and the passthrough requests.
pub async fn collect_responses<F, Fut, E>(
    requests: Vec<InputRequest>,
    mut ask: F,
) -> Result<serde_json::Map<String, serde_json::Value>, E>
where
    F: FnMut(InputRequest) -> Fut,
    Fut: std::future::Future<Output = Result<serde_json::Value, E>>,
{
    let mut responses = serde_json::Map::new();
    for request in requests {
        let key = request.key.clone();
        responses.insert(key, ask(request).await?);
    }
    Ok(responses)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_ours_and_unique() {
        let (a, b) = (new_state(), new_state());
        assert_ne!(a, b);
        assert!(is_ours(&a) && a.len() == STATE_PREFIX.len() + 32);
    }

    #[tokio::test]
    async fn responses_are_collected_by_key_until_the_first_error() {
        let request = |key: &str, method: &str| InputRequest {
            key: key.into(),
            method: method.into(),
            params: None,
        };
        let asks = vec![
            request("a", "roots/list"),
            request("b", "elicitation/create"),
        ];
        let answered = collect_responses(asks.clone(), |r| async move {
            Ok::<_, ()>(serde_json::Value::from(r.method))
        })
        .await
        .unwrap();
        assert_eq!(answered["a"], "roots/list");
        assert_eq!(answered["b"], "elicitation/create");
        let mut asked = Vec::new();
        let failed = collect_responses(asks, |r| {
            asked.push(r.key.clone());
            async move { Err::<serde_json::Value, _>(r.key) }
        })
        .await;
        assert_eq!(failed, Err("a".to_owned()));
        assert_eq!(asked, ["a"], "nothing is asked after an error");
    }
}
