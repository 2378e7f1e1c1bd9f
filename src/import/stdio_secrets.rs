//! The secrets written in a client's stdio entry → references to environment variables, as
//! `import/remote.rs` does for remote entries. Pure: no I/O.
//!
//! What is a secret is the redaction rule of [`crate::redact`]: the value of an `env` variable
//! whose name looks secret ([`key_is_secret`]: `PGPASSWORD`, `API_TOKEN`; not `PAGER`), and in
//! `args` what [`crate::redact::secret_args`] finds (the value after a secret-looking flag,
//! `--token X` or `--token=X`; the value of a `KEY=value` / `Key: value` argument with such a
//! key; a URL's password, `postgres://admin:pw@db/x`; a secret pair inside an argument, its
//! key percent-decoded, `?api%5Fkey=…`; the string of a secret member of a JSON argument,
//! `{"password":"…"}`). Each moves to a variable named after the server and where it was
//! (`PG_PGPASSWORD`, `PG_TOKEN`, `PG_PASSWORD`, `PG_API_KEY`), written `${NAME}` in its place
//! (the proxy expands `${NAME}` in `args` and `env`), and a note says to set it, without the
//! value.
//!
//! `${` in a secret: a value written wholly as references ([`only_references`]: `${TOKEN}`,
//! `${A}${B}`, `Bearer ${TOKEN}`) is a variable already and stays. Any other value that holds
//! `${` (`pa${X}ss`, an unterminated `${`) moves whole: the proxy takes a variable's value as
//! it is, so nothing that was part of the secret is expanded, and its note says to set the
//! variable with the references filled in.

use std::collections::BTreeSet;

use super::remote::{moved_var, only_references};
use crate::redact::key_is_secret;

/// `value` of `env.KEY` of server `server`: `${SERVER_KEY}` when the key looks secret and the
/// value is written in the file (a note says to set the variable), else `value`.
pub(super) fn env_value(server: &str, key: &str, value: String, notes: &mut Vec<String>) -> String {
    if !key_is_secret(key) || value.is_empty() || only_references(&value) {
        return value;
    }
    let var = moved_var(server, key);
    notes.push(format!(
        "set {var} in the proxy's environment to the value of env.{key} that was written in the file (not copied here)"
    ));
    format!("${{{var}}}")
}

/// The secrets of a Codex stdio table (its `args` array and `env` table) moved to variables
/// the same way, edited in place (comments elsewhere in the table stay).
pub(super) fn codex_table(server: &str, table: &mut toml_edit::Table, notes: &mut Vec<String>) {
    if let Some(list) = table.get_mut("args").and_then(|i| i.as_array_mut()) {
        let given: Option<Vec<String>> =
            list.iter().map(|v| v.as_str().map(str::to_owned)).collect();
        if let Some(given) = given {
            let moved = args(server, given.clone(), notes);
            for (i, (old, new)) in given.iter().zip(&moved).enumerate() {
                if old != new {
                    list.replace(i, new.as_str());
                }
            }
        }
    }
    if let Some(env) = table.get_mut("env").and_then(|i| i.as_table_like_mut()) {
        for (key, item) in env.iter_mut() {
            let Some(value) = item.as_str().map(str::to_owned) else {
                continue;
            };
            let new = env_value(server, key.get(), value.clone(), notes);
            if new != value {
                *item = toml_edit::value(new);
            }
        }
    }
}

/// `args` of server `server` with every secret in them replaced by a `${NAME}` reference
/// (one note each says which variable to set).
pub(super) fn args(server: &str, args: Vec<String>, notes: &mut Vec<String>) -> Vec<String> {
    let mut mover = Mover {
        server,
        used: BTreeSet::new(),
        notes,
    };
    let mut flag: Option<String> = None;
    let mut out = Vec::with_capacity(args.len());
    for (i, arg) in args.into_iter().enumerate() {
        let name = arg.trim_start_matches('-').to_owned();
        let is_flag = name.len() < arg.len();
        if let Some(flag) = flag.take().filter(|_| !is_flag && !only_references(&arg)) {
            out.push(mover.moved(&flag, i, &arg, &arg));
            continue;
        }
        let arg = mover.json_moved(i, arg);
        let arg = mover.embedded_moved(i, arg);
        let mut found = crate::redact::secret_args(std::slice::from_ref(&arg));
        // A value that holds a variable just made for a pair or string inside it (`password =
        // ${PG_PASSWORD} host=db`, read whole as `KEY=value`) was moved already.
        found.retain(|v| !only_references(v) && !mover.holds_moved(v));
        if found.is_empty() {
            if is_flag && !name.contains(['=', ':']) && key_is_secret(&name) {
                flag = Some(name);
            }
            out.push(arg);
            continue;
        }
        // The longest first: `Bearer abc` goes whole, not `abc` inside it.
        found.sort_by_key(|v| std::cmp::Reverse(v.len()));
        let suffix = match name.split_once(['=', ':']) {
            Some((key, _)) if !arg.contains("://") => key.trim().to_owned(),
            _ => "PASSWORD".to_owned(),
        };
        out.push(mover.moved(&suffix, i, &arg, &found[0]));
    }
    out
}

/// Moves the secrets of one server's `args` into variables: the names given so far (each
/// new one unique among them) and the notes that say which variable to set.
struct Mover<'a> {
    server: &'a str,
    used: BTreeSet<String>,
    notes: &'a mut Vec<String>,
}

impl Mover<'_> {
    /// `arg` (the `index`th argument) with the value of each secret `key=value` pair inside it
    /// (a URL query's `token=…` or `api%5Fkey=…`, a connection string's `password=…`:
    /// [`crate::redact::embedded_secrets`]) replaced by a reference to a variable named after
    /// the server and the key (percent-decoded). A value that is only `${…}` references
    /// already ([`only_references`]) stays.
    fn embedded_moved(&mut self, index: usize, arg: String) -> String {
        let pairs: Vec<_> = crate::redact::embedded_secrets(&arg)
            .into_iter()
            .filter(|pair| !only_references(pair.value))
            .map(|pair| (pair.name(), pair.span))
            .collect();
        self.replaced(index, arg, pairs)
    }

    /// `arg` (the `index`th argument) with each secret string of a JSON argument
    /// (`{"password":"…"}`: [`crate::redact::json_secrets`]) replaced, between its quotes, by
    /// a reference to a variable named after the server and the member's name. A string that
    /// is only `${…}` references already stays.
    fn json_moved(&mut self, index: usize, arg: String) -> String {
        let strings: Vec<_> = crate::redact::json_secrets(&arg)
            .into_iter()
            .filter(|secret| !only_references(&secret.value))
            .map(|secret| (secret.key, secret.span))
            .collect();
        self.replaced(index, arg, strings)
    }

    /// Whether `text` holds a reference to a variable this mover made.
    fn holds_moved(&self, text: &str) -> bool {
        self.used
            .iter()
            .any(|var| text.contains(&format!("${{{var}}}")))
    }

    /// `arg` with each of `spans` replaced by a reference to a new variable named after its
    /// key.
    fn replaced(
        &mut self,
        index: usize,
        arg: String,
        spans: Vec<(String, std::ops::Range<usize>)>,
    ) -> String {
        let mut out = arg.clone();
        // From the last back, so the earlier spans still point at their values.
        for (key, span) in spans.into_iter().rev() {
            let reference = self.reference(&key, index, &arg[span.clone()]);
            out.replace_range(span, &reference);
        }
        out
    }

    /// `arg` (the `index`th argument) with `secret` in it replaced by a reference to the
    /// variable named after the server and `suffix` ([`Mover::reference`]).
    fn moved(&mut self, suffix: &str, index: usize, arg: &str, secret: &str) -> String {
        arg.replace(secret, &self.reference(suffix, index, secret))
    }

    /// `${VAR}` for a new variable named after the server and `suffix` (made unique among
    /// those given), with the note saying to set it to the secret `written` in `args[index]`:
    /// with its `${…}` parts filled in when it has any (the proxy takes a variable's value as
    /// it is, so nothing in it is expanded again), and with its escapes when it stood in a
    /// JSON string (the reference stands between the same quotes).
    fn reference(&mut self, suffix: &str, index: usize, written: &str) -> String {
        let base = moved_var(self.server, suffix);
        let mut var = base.clone();
        let mut n = 2;
        while !self.used.insert(var.clone()) {
            var = format!("{base}_{n}");
            n += 1;
        }
        let filled = if written.contains("${") {
            ", with its variables filled in"
        } else {
            ""
        };
        let escaped = if written.contains('\\') {
            ", escapes as written"
        } else {
            ""
        };
        self.notes.push(format!(
            "set {var} in the proxy's environment to the secret that was written in args[{index}] (not copied here{filled}{escaped})"
        ));
        format!("${{{var}}}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_in_args_move_to_variables() {
        let mut notes = Vec::new();
        let given = [
            "--dsn",
            "postgres://admin:pw-1234@db/x",
            "--token",
            "argSecret",
            "--api-key=k-42",
            "Authorization: Bearer abc-777",
            "--token",
            "${ALREADY}",
            "--max-tokens",
            "4096",
            "plain",
        ];
        let out = args("pg", given.map(String::from).to_vec(), &mut notes);
        assert_eq!(
            out,
            [
                "--dsn",
                "postgres://admin:${PG_PASSWORD}@db/x",
                "--token",
                "${PG_TOKEN}",
                "--api-key=${PG_API_KEY}",
                "Authorization: ${PG_AUTHORIZATION}",
                "--token",
                "${ALREADY}",
                "--max-tokens",
                "4096",
                "plain",
            ]
        );
        assert_eq!(notes.len(), 4, "{notes:?}");
        let all = notes.join("\n");
        for secret in ["pw-1234", "argSecret", "k-42", "abc-777"] {
            assert!(!all.contains(secret), "{all}");
        }
        assert!(notes[1].starts_with("set PG_TOKEN in the proxy's environment"));
    }

    #[test]
    fn secrets_inside_query_strings_and_connection_strings_move_to_variables() {
        let mut notes = Vec::new();
        let given = [
            "https://h/mcp?x=1&api_key=k-42&token=t-77",
            "host=db password='pw 123' dbname=x",
            "postgres://bob:pw-9@db/x?sslpassword=ssl-5",
            "https://h/mcp?token=${KEPT}",
            r#"host=db password="dq secret 77" dbname=x"#,
            "password = SpacedPW66 host=db",
            "Server=x;UID=u;PWD=OdbcPwd999;",
            "--header=Authorization: Bearer hdr-12345",
            "https://app/cb#access_token=frag-777",
        ];
        let out = args("pg", given.map(String::from).to_vec(), &mut notes);
        assert_eq!(
            out,
            [
                "https://h/mcp?x=1&api_key=${PG_API_KEY}&token=${PG_TOKEN}",
                "host=db password='${PG_PASSWORD}' dbname=x",
                "postgres://bob:${PG_PASSWORD_2}@db/x?sslpassword=${PG_SSLPASSWORD}",
                "https://h/mcp?token=${KEPT}",
                r#"host=db password="${PG_PASSWORD_3}" dbname=x"#,
                "password = ${PG_PASSWORD_4} host=db",
                "Server=x;UID=u;PWD=${PG_PWD};",
                "--header=Authorization: ${PG_HEADER}",
                "https://app/cb#access_token=${PG_ACCESS_TOKEN}",
            ]
        );
        let secrets = [
            "k-42",
            "t-77",
            "pw 123",
            "pw-9",
            "ssl-5",
            "secret 77",
            "Spaced",
            "Odbc",
            "hdr-1",
            "frag-7",
        ];
        notes_hide(&notes, 10, &secrets);
    }

    /// Checks that there are `count` notes and none holds any of `secrets`.
    fn notes_hide(notes: &[String], count: usize, secrets: &[&str]) {
        let all = notes.join("\n");
        assert_eq!(notes.len(), count, "{all}");
        for secret in secrets {
            assert!(!all.contains(secret), "{all}");
        }
    }

    /// A JSON object passed as one argument, a percent-encoded query key and a secret that
    /// holds `${` were copied as written.
    #[test]
    fn json_percent_encoded_and_dollar_brace_secrets_move_to_variables() {
        let mut notes = Vec::new();
        let given = [
            r#"{"password":"hunter2"}"#,
            r#"{"db": {"apiKey": "ak-\"77", "user": "bob"}, "token": "${T}"}"#,
            "https://h/mcp?api%5Fkey=SECRET1&x=1",
            "--token=Qa9${X}Zc7",
            "--password",
            "Pw4${unterminated",
            "host=db password=Pq5${Y}Pq6",
            "Authorization: Bearer ${TOK}",
            "--token=${A}${B}",
        ];
        let out = args("pg", given.map(String::from).to_vec(), &mut notes);
        assert_eq!(
            out,
            [
                r#"{"password":"${PG_PASSWORD}"}"#,
                r#"{"db": {"apiKey": "${PG_APIKEY}", "user": "bob"}, "token": "${T}"}"#,
                "https://h/mcp?api%5Fkey=${PG_API_KEY}&x=1",
                "--token=${PG_TOKEN}",
                "--password",
                "${PG_PASSWORD_2}",
                "host=db password=${PG_PASSWORD_3}",
                "Authorization: Bearer ${TOK}",
                "--token=${A}${B}",
            ]
        );
        let secrets = [
            "hunter2", "ak-", "SECRET1", "Qa9", "Zc7", "Pw4", "Pq5", "Pq6",
        ];
        notes_hide(&notes, 6, &secrets);
        assert!(notes[1].ends_with("(not copied here, escapes as written)"));
        assert!(notes[3].ends_with("(not copied here, with its variables filled in)"));
    }

    #[test]
    fn only_references_stay() {
        for kept in ["${A}", "${A}${B_2}", "Bearer ${T}", "basic  ${T}"] {
            assert!(only_references(kept), "{kept}");
        }
        for moved in [
            "",
            "a${A}",
            "${A}b",
            "${A",
            "${1A}",
            "Bearer",
            "Bearer x${T}",
            "${}",
        ] {
            assert!(!only_references(moved), "{moved}");
        }
    }

    #[test]
    fn secret_env_values_move_to_variables() {
        let mut notes = Vec::new();
        let v = env_value("pg", "PGPASSWORD", "hunter2".into(), &mut notes);
        assert_eq!(v, "${PG_PGPASSWORD}");
        assert_eq!(env_value("pg", "PAGER", "less".into(), &mut notes), "less");
        let v = env_value("pg", "API_TOKEN", "${T}".into(), &mut notes);
        assert_eq!(v, "${T}");
        assert_eq!(notes.len(), 1);
        let v = env_value("pg", "API_TOKEN", "tok${T}en".into(), &mut notes);
        assert_eq!(v, "${PG_API_TOKEN}", "a literal part moves the value whole");
        assert!(!notes[0].contains("hunter2"), "{notes:?}");
    }
}
