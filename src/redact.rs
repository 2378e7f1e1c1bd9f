//! Keeping secrets out of what the proxy writes: logs, envelopes, `check` output, transcripts.
//!
//! Two tools:
//! - [`key_is_secret`]: whether a key (a JSON member name in tool arguments, an environment
//!   variable name, a `KEY=value` in text) names a secret, by patterns matched
//!   case-insensitively and ignoring `_`, `-`, `.` and spaces, at the start or the end of the
//!   key: with the pattern `api_key`, the keys `apiKey`, `x-api-key` and `API_KEY_2` are secret;
//!   with `token`, `access_token` and `GITHUB_TOKEN` are, `max_tokens` is not.
//! - [`Redactor`]: rewrites free text (a server's stderr) so that every value of an
//!   environment variable the proxy passed to that server, every `KEY=value` / `KEY: value`
//!   whose key is secret, and every `Bearer …` / `Basic …` credential reads [`REDACTED`]. After
//!   the words `Bearer` and `Basic` in running text only a word that looks like a credential
//!   goes ([`looks_like_credential`]): "the bearer of bad news" and "basic auth failed" stay.
//!
//! Pure; no I/O. Source: the project's rule that secrets (tokens, environment values, header
//! values) never reach logs, transcripts, envelopes or `check` output.

mod documents;
mod embedded;
mod json_arg;
mod results;
mod spelling;
pub use documents::{parse_document, secrets_in_document};
pub use embedded::{embedded_secrets, redact_embedded_json};
pub use json_arg::json_secrets;
pub use results::SecretValues;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Patterns that always mark a key as secret, besides the configured `redact_keys`.
pub const SECRET_KEY_PATTERNS: [&str; 10] = [
    "password",
    "passwd",
    "token",
    "secret",
    "api_key",
    "authorization",
    "credential",
    "private_key",
    "access_key",
    "cookie",
];

/// Environment values shorter than this (characters) are not searched for in text: a value
/// such as `1` or `cat` is no secret and would garble every line.
pub const MIN_SECRET_VALUE_CHARS: usize = 4;

// One key-matching rule for the transcript's `redact_keys` and the secret patterns here.
use envelope_core::record::normalize_key as normalize;

/// Whether `key` looks like it names a secret ([`SECRET_KEY_PATTERNS`]); a protocol field such
/// as `progressToken` ([`envelope_core::record::PROTOCOL_KEYS`]) does not.
pub fn key_is_secret(key: &str) -> bool {
    if envelope_core::record::PROTOCOL_KEYS.contains(&key) {
        return false;
    }
    let key = normalize(key);
    SECRET_KEY_PATTERNS.iter().any(|p| {
        let p = normalize(p);
        key.starts_with(&p) || key.ends_with(&p)
    })
}

/// Rewrites text so that known secret values and values of secret-looking keys are gone.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Longest first, so that a value containing another is replaced whole.
    values: Vec<String>,
    /// Whether the text shows JSON or TOML documents ([`Redactor::for_documents`]).
    documents: bool,
}

impl Redactor {
    /// A redactor for one server: `passed` are the variables the config sets for it (every
    /// value is secret), `inherited` the proxy's own environment (only values of secret-looking
    /// names are).
    pub fn for_server<'a>(
        passed: impl IntoIterator<Item = (&'a str, &'a str)>,
        inherited: impl IntoIterator<Item = (String, String)>,
    ) -> Redactor {
        let mut values: Vec<String> = passed.into_iter().map(|(_, v)| v.to_owned()).collect();
        values.extend(
            inherited
                .into_iter()
                .filter(|(k, _)| key_is_secret(k))
                .map(|(_, v)| v),
        );
        Redactor::default().with_values(values)
    }

    /// A redactor for text that shows JSON or TOML documents (`install --dry-run`'s diffs),
    /// with the secret `values` written in them: after a secret-looking key only a string is a
    /// secret, and an unquoted boolean, `null` or number (`"password": true`,
    /// `token_limit = 5`) is shown as it is.
    pub fn for_documents(values: impl IntoIterator<Item = String>) -> Redactor {
        Redactor {
            documents: true,
            ..Redactor::default()
        }
        .with_values(values)
    }

    /// This redactor with more secret `values` (those shorter than [`MIN_SECRET_VALUE_CHARS`]
    /// are left out), e.g. the secrets in a server's arguments ([`secret_args`]).
    pub fn with_values(mut self, values: impl IntoIterator<Item = String>) -> Redactor {
        self.values.extend(values);
        self.values
            .retain(|v| v.chars().count() >= MIN_SECRET_VALUE_CHARS);
        self.values
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        self.values.dedup();
        self
    }

    /// `text` with secrets replaced by [`REDACTED`]: the values as written or in any JSON
    /// spelling (`P\u00e4ss` for `Päss`, see [`spelling`]), then the keyed values.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        if text.contains('\\') {
            if let Some(clean) = spelling::replace_spelled(text, &self.values, REDACTED) {
                out = clean;
            }
        } else {
            for v in &self.values {
                if out.contains(v.as_str()) {
                    out = out.replace(v.as_str(), REDACTED);
                }
            }
        }
        redact_keyed_values(&out, self.documents)
    }

    /// `text` redacted, then cut to at most `max_chars` characters (Unicode scalar values)
    /// plus the truncation marker when cut: text a server sent, fit for a log line or an error message.
    pub fn redact_within(&self, text: &str, max_chars: usize) -> String {
        cut_chars(self.redact(text), max_chars)
    }
}

/// `text` cut to at most `max_chars` characters (Unicode scalar values) followed, when cut, by
/// the one truncation marker (`… [N characters cut]`, [`envelope_core::message_cut::cut_chars`]).
pub(crate) fn cut_chars(text: String, max_chars: usize) -> String {
    envelope_core::message_cut::cut_chars(&text, max_chars)
}

/// The secrets among a server's command-line arguments (its `args`): the value after a flag
/// whose name is secret-looking ([`key_is_secret`]: `--api-key sk-…`, `--token=…`), of a
/// `KEY=value` or `Key: value` argument with such a key (`API_TOKEN=…`,
/// `Authorization: Bearer …`, whose credential counts on its own too), and the password of a
/// URL with credentials (`postgres://user:password@host/db`), the value of a secret
/// `key=value` pair inside an argument ([`embedded_secrets`]: a query's `?token=…` or
/// `?api%5Fkey=…`, percent-decoded too; a connection string's `password=…`), and the strings
/// of secret members of a JSON argument ([`json_secrets`]: `{"apiKey":"…"}`, decoded and as
/// written). The same rule as for environment values: what is passed to a server as a secret
/// never reaches our output.
pub fn secret_args(args: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    let mut after_secret_flag = false;
    for arg in args {
        if std::mem::take(&mut after_secret_flag) && !arg.starts_with("--") {
            found.push(arg.clone());
            continue;
        }
        found.extend(url_password(arg));
        let name = arg.trim_start_matches('-');
        let is_flag = name.len() < arg.len();
        match name.split_once(['=', ':']) {
            Some((key, value)) if key_is_secret(key.trim()) => push_keyed(value, &mut found),
            // `--header=Authorization: Bearer …` in one argument (mcp-remote's style): the
            // flag's value is itself `Key: value`.
            Some((_, header)) if is_flag => match header.split_once(':') {
                Some((key, value)) if key_is_secret(key.trim()) => push_keyed(value, &mut found),
                _ => {}
            },
            Some(_) => {}
            None => after_secret_flag = is_flag && key_is_secret(name),
        }
        let embedded = embedded_secrets(arg)
            .into_iter()
            .flat_map(|pair| [pair.value.to_owned(), percent_decoded(pair.value)]);
        let in_json = json_secrets(arg)
            .into_iter()
            .flat_map(|secret| [arg[secret.span].to_owned(), secret.value]);
        for value in embedded.chain(in_json) {
            if !found.contains(&value) {
                found.push(value);
            }
        }
    }
    found.retain(|v| !v.is_empty());
    found
}

/// Adds the value of a secret `KEY=value` / `Key: value` to `found`, and the credential alone
/// when the value is `Bearer …` or `Basic …`.
fn push_keyed(value: &str, found: &mut Vec<String>) {
    let value = value.trim();
    if let Some((scheme, credential)) = value.split_once(' ') {
        if is_scheme(scheme) {
            found.push(credential.trim().to_owned());
        }
    }
    found.push(value.to_owned());
}

/// A server's `command` as written, for a message: the secrets of its words
/// ([`secret_args`]: `--token=…`, a URL's password) read [`REDACTED`]. A `command` holds no
/// arguments when it works (they go in `args`), but one written with them, whose program then
/// cannot be started, is quoted in that error, which reaches `check`, the logs and the client's
/// `instructions`.
pub fn command_shown(command: &str) -> String {
    let words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
    secret_args(&words)
        .iter()
        .fold(command.to_owned(), |shown, secret| {
            shown.replace(secret.as_str(), REDACTED)
        })
}

/// The password in a URL's `user:password@` part, if any.
fn url_password(arg: &str) -> Option<String> {
    url_user_info(arg).map(|(_, password)| password.to_owned())
}

/// The user name and the (non-empty) password of a URL's `user:password@` part, as written.
fn url_user_info(url: &str) -> Option<(&str, &str)> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    let (user, password) = userinfo.split_once(':')?;
    (!password.is_empty()).then_some((user, password))
}

/// The secrets of a remote server's `url` (after `${VAR}` expansion), for the redactor of the
/// text that server sends: the password of its user info as written, percent-decoded, and the
/// HTTP Basic credential they are sent as (RFC 7617: base64 of `user:password`). Empty when the
/// URL has no password.
pub fn url_secrets(url: &str) -> Vec<String> {
    use base64::Engine as _;
    let Some((user, password)) = url_user_info(url) else {
        return Vec::new();
    };
    let decoded = percent_decoded(password);
    let pair = format!("{}:{decoded}", percent_decoded(user));
    let basic = base64::engine::general_purpose::STANDARD.encode(pair);
    vec![password.to_owned(), decoded, basic]
}

/// `text` with every `%XX` (two hex digits) replaced by that byte (RFC 3986 percent-encoding);
/// bytes that do not make UTF-8 become U+FFFD.
pub(crate) fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match hex
            .filter(|_| bytes[i] == b'%')
            .map(|h| u8::from_str_radix(h, 16))
        {
            Some(Ok(byte)) => {
                out.push(byte);
                i += 3;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Characters that may make up a key in `KEY=value` text (`%` of a percent-encoded one too).
fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '%')
}

/// Whether `word`, the word after `Bearer` or `Basic` in running text, looks like a credential
/// rather than an ordinary word: it is made of the characters of an RFC 6750 `b64token`
/// (letters, digits, `-._~+/`, then `=` padding) and has a digit, a `-._~+/` inside it or `=`
/// padding, or an upper-case letter after a lower-case one (base64), or at least 20 characters.
/// `tok123`, `ghp_x9`, `dXNlcjpwYXNz`, `abc.def` are credentials; `and`, `of`, `auth`, `token`,
/// `Token.` are not.
fn looks_like_credential(word: &str) -> bool {
    let body = word.trim_end_matches('=');
    let padded = body.len() < word.len();
    let b64 = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '+' | '/');
    if body.is_empty() || !body.chars().all(b64) {
        return false;
    }
    // A mark at the end is the sentence's (`the bearer token.`), not the credential's.
    let inner = body.trim_end_matches(['.', '-', '_', '~', '+', '/']);
    let marked = inner.contains(|c: char| !c.is_ascii_alphabetic());
    let mixed_case = inner
        .as_bytes()
        .windows(2)
        .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
    padded || marked || mixed_case || body.len() >= 20
}

/// Characters that end an unquoted value.
fn ends_value(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ';' | '&' | '}' | ')' | ']')
}

/// Whether `word` is an HTTP authentication scheme whose next word is a credential.
fn is_scheme(word: &str) -> bool {
    word.eq_ignore_ascii_case("bearer") || word.eq_ignore_ascii_case("basic")
}

/// The first word of `text` after spaces and an opening quote, up to the end of a value.
fn next_word(text: &str) -> &str {
    let word = text.trim_start_matches([' ', '"', '\'']);
    &word[..word.find(ends_value).unwrap_or(word.len())]
}

/// Whether `word`, an unquoted value, is a JSON or TOML boolean, `null` or number (`true`,
/// `-1.5e3`, `1_000`): no string, so no secret, in a document.
fn is_typed_literal(word: &str) -> bool {
    let digits = word.trim_start_matches(['-', '+']);
    matches!(word, "true" | "false" | "null")
        || (digits.starts_with(|c: char| c.is_ascii_digit())
            && digits.replace('_', "").parse::<f64>().is_ok())
}

/// Replaces the value after every `KEY=`, `KEY:`, `"KEY":` whose key is secret, and the
/// credential after `Bearer ` or `Basic ` ([`looks_like_credential`]). With `documents`, an
/// unquoted boolean, `null` or number stays ([`is_typed_literal`]).
fn redact_keyed_values(text: &str, documents: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find(['=', ':', ' ']) {
        let sep = rest[pos..].chars().next().expect("found a separator");
        let before = &rest[..pos];
        out.push_str(before);
        out.push(sep);
        let after = &rest[pos + 1..];
        let key_text = before.trim_end_matches(['"', '\'']);
        let key_start = key_text
            .char_indices()
            .rev()
            .take_while(|(_, c)| is_key_char(*c))
            .last()
            .map_or(key_text.len(), |(i, _)| i);
        let key = &key_text[key_start..];
        let secret = match sep {
            ' ' => is_scheme(key) && looks_like_credential(next_word(after)),
            _ => !key.is_empty() && key_is_secret(&percent_decoded(key)),
        };
        if !secret {
            rest = after;
            continue;
        }
        // The value: after spaces and an opening quote, up to its end.
        let lead = after.len() - after.trim_start_matches([' ', '"', '\'']).len();
        let value = &after[lead..];
        if let Some(tail) = value.strip_prefix(REDACTED) {
            out.push_str(&after[..lead]);
            out.push_str(REDACTED);
            rest = tail;
            continue;
        }
        // A quoted value runs to its closing quote (`password="two words"`), else to the end
        // of the word.
        let quote = after[..lead]
            .chars()
            .rev()
            .find(|c| matches!(c, '"' | '\''));
        let mut end = match quote.and_then(|q| value.find(q)) {
            Some(close) => close,
            None => value.find(ends_value).unwrap_or(value.len()),
        };
        let quoted = quote.is_some();
        if documents && !quoted && is_typed_literal(&value[..end]) {
            rest = after;
            continue;
        }
        if is_scheme(&value[..end]) && looks_like_credential(next_word(&value[end..])) {
            // `Authorization: Bearer <credential>`: the credential goes too.
            let gap = value[end..].len() - value[end..].trim_start_matches(' ').len();
            let word = &value[end + gap..];
            end += gap + word.find(ends_value).unwrap_or(word.len());
        }
        if end == 0 {
            rest = after;
            continue;
        }
        out.push_str(&after[..lead]);
        out.push_str(REDACTED);
        rest = &value[end..];
    }
    out.push_str(rest);
    out
}

/// A parser's error message without the string values it quotes (`invalid type: string
/// "sk-…", expected usize` becomes `invalid type: a string, expected usize`; ``unknown variant
/// `x`, expected …`` becomes `unknown variant, expected …`): config errors name the key, and a
/// value written under the wrong key may be a secret. Numbers and booleans are kept.
pub fn without_quoted_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    loop {
        let string_at = rest.find("string \"");
        let variant_at = rest.find("variant `");
        let (at, skip, close, replacement) = match (string_at, variant_at) {
            (Some(s), v) if v.is_none_or(|v| s < v) => (s, "string \"".len(), '"', "a string"),
            (_, Some(v)) => (v, "variant `".len(), '`', "variant"),
            _ => break,
        };
        out.push_str(&rest[..at]);
        out.push_str(replacement);
        let value = &rest[at + skip..];
        // The closing quote, stepping over backslash escapes.
        let mut escaped = false;
        let end = value.char_indices().find(|&(_, c)| {
            let done = !escaped && c == close;
            escaped = !escaped && c == '\\';
            done
        });
        rest = match end {
            Some((i, _)) => &value[i + 1..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn secrets_written_into_a_command_are_not_shown() {
        let shown =
            super::command_shown("/opt/bin/srv --token=tok123 --api-key k-9 https://u:pw@h/x");
        assert_eq!(
            shown,
            "/opt/bin/srv --token=[redacted] --api-key [redacted] https://u:[redacted]@h/x"
        );
        assert_eq!(super::command_shown("/usr/bin/git"), "/usr/bin/git");
    }

    use super::*;
    use envelope_core::record::key_matches;

    #[test]
    fn secrets_in_arguments_are_found() {
        let args: Vec<String> = [
            "server.py",
            "--api-key",
            "sk-live-123456",
            "--token=tok-999999",
            "--port",
            "8080",
            "postgres://bob:hunter22@db:5432/x",
            "--header",
            "Authorization: Bearer abc-777777",
            "GITHUB_TOKEN=ghp_4242",
            "--max-tokens",
            "4096",
            "https://example.com/a:b@c",
            "https://h/mcp?x=1&api_key=k%40y-1",
            "host=db password='pw 55' dbname=x",
            "--header=Authorization: Bearer hdr-12345",
            "--header=X-Api-Key: xk-999",
            "--header=Accept: text/plain",
            "https://app/cb#token=frag-777",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            secret_args(&args),
            [
                "sk-live-123456",
                "tok-999999",
                "hunter22",
                "abc-777777",
                "Bearer abc-777777",
                "ghp_4242",
                "k%40y-1",
                "k@y-1",
                "pw 55",
                "hdr-12345",
                "Bearer hdr-12345",
                "xk-999",
                "frag-777",
            ]
        );
        let r = Redactor::default().with_values(secret_args(&args));
        let line = "connecting with sk-live-123456 to db as bob:hunter22 on 8080, token abc-777777";
        assert_eq!(
            r.redact(line),
            "connecting with [redacted] to db as bob:[redacted] on 8080, token [redacted]"
        );
    }

    #[test]
    fn a_quoted_keyed_value_goes_whole() {
        let r = Redactor::default();
        assert_eq!(
            r.redact(r#"arg: host=db password="dq secret 77" dbname=x"#),
            r#"arg: host=db password="[redacted]" dbname=x"#
        );
        assert_eq!(r.redact("token='a b' next"), "token='[redacted]' next");
        assert_eq!(r.redact("password=\"open end"), "password=\"[redacted] end");
    }

    #[test]
    fn the_progress_token_is_a_protocol_field_not_a_secret() {
        assert!(!key_is_secret("progressToken"));
        assert!(key_is_secret("accessToken") && key_is_secret("progress_token_secret"));
    }

    #[test]
    fn a_urls_password_is_a_secret_in_every_form() {
        assert!(url_secrets("https://host/mcp").is_empty());
        assert!(url_secrets("https://bob@host/mcp").is_empty());
        let secrets = url_secrets("https://bob:p%40ss-w0rd@host:8443/mcp?x=1");
        assert_eq!(secrets[..2], ["p%40ss-w0rd", "p@ss-w0rd"]);
        let r = Redactor::default().with_values(secrets);
        let echo = "denied: password p@ss-w0rd (p%40ss-w0rd), header Ym9iOnBAc3MtdzByZA== for bob";
        assert_eq!(
            r.redact(echo),
            "denied: password [redacted] ([redacted]), header [redacted] for bob"
        );
    }

    #[test]
    fn redact_within_cuts_on_char_boundaries_after_redacting() {
        let r = Redactor::default();
        assert_eq!(r.redact_within("éééé", 2), "éé… [2 characters cut]");
        assert_eq!(r.redact_within("ab", 2), "ab");
        let r = Redactor::for_server([("K", "sk-123456")], std::iter::empty());
        assert_eq!(r.redact_within("sk-123456 x", 200), "[redacted] x");
    }

    fn keys(k: &[&str]) -> Vec<String> {
        k.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn key_patterns_match_usual_spellings() {
        let defaults = keys(&["password", "token", "secret", "api_key", "authorization"]);
        for k in [
            "access_token",
            "apiKey",
            "x-api-key",
            "Authorization",
            "GITHUB_TOKEN",
            "client_secret",
            "PASSWORD",
            "refresh-token",
            "Nested.Password",
        ] {
            assert!(key_matches(k, &defaults), "{k}");
        }
        for k in [
            "max_tokens",
            "user",
            "path",
            "keyboard",
            "total_tokens_used",
        ] {
            assert!(!key_matches(k, &defaults), "{k}");
        }
        assert!(!key_matches("anything", &keys(&[""])));
    }

    #[test]
    fn passed_env_values_and_keyed_secrets_are_redacted() {
        let r = Redactor::for_server(
            [("API_TOKEN", "sk-live-123456"), ("PAGER", "cat")],
            [
                ("HOME".to_owned(), "/home/me".to_owned()),
                ("GITHUB_TOKEN".to_owned(), "ghp_abcdef".to_owned()),
            ],
        );
        assert_eq!(
            r.redact("upstream rejected credentials API_TOKEN=sk-live-123456 for cat"),
            "upstream rejected credentials API_TOKEN=[redacted] for cat"
        );
        assert_eq!(
            r.redact("using ghp_abcdef in /home/me"),
            "using [redacted] in /home/me"
        );
        assert_eq!(r.redact("sent sk-live-123456"), "sent [redacted]");
    }

    #[test]
    fn a_passed_value_in_a_json_spelling_leaves_stderr() {
        let r = Redactor::for_server([("MY_API_TOKEN", "Pässword1234")], std::iter::empty());
        assert_eq!(
            r.redact(r#"config {"user": "P\u00e4ssword1234", "n": "a\nb"}"#),
            r#"config {"user": "[redacted]", "n": "a\nb"}"#
        );
    }

    /// `install --dry-run` showed `"password": [redacted]` for `"password": true`.
    #[test]
    fn in_documents_only_strings_after_secret_keys_go() {
        let r = Redactor::for_documents(["sk-live-123456".to_owned()]);
        let diff = "+  \"password\": true,\n+  \"token_limit\": 5,\n-  api_key=-1.5e3\n\
                    +  \"token\": null\n+  \"secret\": \"true\"\n+  \"api_key\": \"sk-live-123456\"\n\
                    +  password='hunter2'\n+  token=\"123456\" secret=abc";
        assert_eq!(
            r.redact(diff),
            "+  \"password\": true,\n+  \"token_limit\": 5,\n-  api_key=-1.5e3\n\
             +  \"token\": null\n+  \"secret\": \"[redacted]\"\n+  \"api_key\": \"[redacted]\"\n\
             +  password='[redacted]'\n+  token=\"[redacted]\" secret=[redacted]"
        );
        assert_eq!(
            Redactor::default().redact("password=123456 token: true"),
            "password=[redacted] token: [redacted]",
            "in free text (a server's stderr) every value after a secret key goes"
        );
    }

    #[test]
    fn quoted_values_leave_parser_messages() {
        assert_eq!(
            without_quoted_values(r#"invalid type: string "sk-1\"2", expected usize"#),
            "invalid type: a string, expected usize"
        );
        assert_eq!(
            without_quoted_values("unknown variant `sk-9`, expected `a` or `b`"),
            "unknown variant, expected `a` or `b`"
        );
        assert_eq!(
            without_quoted_values("invalid value: integer `-5`, expected usize"),
            "invalid value: integer `-5`, expected usize"
        );
    }

    #[test]
    fn secret_looking_keys_in_text() {
        let r = Redactor::default();
        for (text, want) in [
            ("password=hunter2 user=bob", "password=[redacted] user=bob"),
            (
                r#"{"api_key": "abc", "n": 1}"#,
                r#"{"api_key": "[redacted]", "n": 1}"#,
            ),
            ("Authorization: Bearer xyz.abc", "Authorization: [redacted]"),
            ("header bearer tok123 sent", "header bearer [redacted] sent"),
            ("client_secret='s3' rest", "client_secret='[redacted]' rest"),
            ("time: 12:00 ok", "time: 12:00 ok"),
            ("token=", "token="),
        ] {
            assert_eq!(r.redact(text), want, "{text}");
        }
    }

    /// After `Bearer` / `Basic` in running text only a credential goes, never the words
    /// around it; keyed values and credentials of every shape still go.
    #[test]
    fn bearer_and_basic_take_credentials_not_words() {
        let r = Redactor::default();
        for text in [
            "held by the bearer  and returned",
            "the bearer of bad news.",
            "basic auth failed",
            "a Bearer token is required",
            "send the bearer token.",
            "Basic Authentication, please",
            "bearer",
        ] {
            assert_eq!(r.redact(text), text, "ordinary words stay");
        }
        for (text, want) in [
            (
                "retry with bearer tok123 now",
                "retry with bearer [redacted] now",
            ),
            ("Bearer ghp_AbC", "Bearer [redacted]"),
            ("basic dXNlcjpwYXNz sent", "basic [redacted] sent"),
            ("Basic dXNlcjpw==", "Basic [redacted]"),
            ("bearer abc.def.ghi", "bearer [redacted]"),
            ("bearer abcdefghijklmnopqrstuvwxyz", "bearer [redacted]"),
            ("Authorization: Bearer xyz.abc", "Authorization: [redacted]"),
            ("Authorization: Bearer and", "Authorization: [redacted] and"),
            (
                "authorization=plainword rest",
                "authorization=[redacted] rest",
            ),
        ] {
            assert_eq!(r.redact(text), want, "{text}");
        }
    }
}
