//! Who may talk to the HTTP endpoint: the bind address rule, the `Origin` check against DNS
//! rebinding, and the bearer token. Pure functions over header values.
//!
//! Sources: MCP 2025-11-25 and 2026-07-28 "Streamable HTTP: Security" (servers MUST validate
//! `Origin` and answer an invalid one with 403; SHOULD bind only to localhost when local;
//! SHOULD authenticate); RFC 6750 §3 (`WWW-Authenticate: Bearer` on 401).

use std::net::SocketAddr;

use subtle::ConstantTimeEq;

/// Host names of this machine an `Origin` may carry without being listed.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Refuses to listen on `addr` when it is not a loopback address and no bearer token is
/// required. Errors name the address and the flag that fixes it.
pub fn check_bind(addr: &SocketAddr, token_required: bool) -> Result<(), String> {
    if addr.ip().is_loopback() || token_required {
        return Ok(());
    }
    Err(format!(
        "{addr} is not a loopback address: serving it needs --auth-token-env NAME (the \
         environment variable holding the bearer token clients must send)"
    ))
}

/// Whether a request with this `Origin` header value may be served: no `Origin` (not a
/// browser), an `http`/`https` origin on a loopback host (any port), or one of `allowed`
/// (compared without case). `null` and anything unparsable are refused.
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
    if rest.contains(['/', '@', '?', '#']) {
        return false;
    }
    let host = match rest.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((inner, port))
                if port.is_empty() || port.strip_prefix(':').is_some_and(is_port) =>
            {
                format!("[{inner}]")
            }
            _ => return false,
        },
        None => match rest.split_once(':') {
            Some((host, port)) if is_port(port) => host.to_owned(),
            Some(_) => return false,
            None => rest.to_owned(),
        },
    };
    LOOPBACK_HOSTS.contains(&host.as_str())
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
        assert!(check_bind(&local, false).is_ok());
        assert!(check_bind(&v6, false).is_ok());
        let err = check_bind(&any, false).unwrap_err();
        assert!(err.contains("--auth-token-env"), "{err}");
        assert!(check_bind(&any, true).is_ok());
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
