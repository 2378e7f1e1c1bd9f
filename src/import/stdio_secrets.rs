//! The secrets written in a client's stdio entry → references to environment variables, as
//! `import/remote.rs` does for remote entries. Pure: no I/O.
//!
//! What is a secret is the redaction rule of [`crate::redact`]: the value of an `env` variable
//! whose name looks secret ([`key_is_secret`]: `PGPASSWORD`, `API_TOKEN`; not `PAGER`), and in
//! `args` what [`crate::redact::secret_args`] finds (the value after a secret-looking flag,
//! `--token X` or `--token=X`; the value of a `KEY=value` / `Key: value` argument with such a
//! key; a URL's password, `postgres://admin:pw@db/x`). Each moves to a variable named after the
//! server and where it was (`PG_PGPASSWORD`, `PG_TOKEN`, `PG_PASSWORD`), written `${NAME}` in
//! its place (the proxy expands `${NAME}` in `args` and `env`), and a note says to set it,
//! without the value. A value that already is a variable reference stays.

use std::collections::BTreeSet;

use super::remote::{moved_var, single_var};
use crate::redact::key_is_secret;

/// `value` of `env.KEY` of server `server`: `${SERVER_KEY}` when the key looks secret and the
/// value is written in the file (a note says to set the variable), else `value`.
pub(super) fn env_value(server: &str, key: &str, value: String, notes: &mut Vec<String>) -> String {
    if !key_is_secret(key) || value.is_empty() || single_var(&value).is_some() {
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
    let mut used = BTreeSet::new();
    let mut flag: Option<String> = None;
    let mut out = Vec::with_capacity(args.len());
    for (i, arg) in args.into_iter().enumerate() {
        let name = arg.trim_start_matches('-').to_owned();
        let is_flag = name.len() < arg.len();
        if let Some(flag) = flag.take().filter(|_| !is_flag && !arg.contains("${")) {
            out.push(moved(server, &flag, i, &arg, &arg, &mut used, notes));
            continue;
        }
        let arg = embedded_moved(server, i, arg, &mut used, notes);
        let mut found = crate::redact::secret_args(std::slice::from_ref(&arg));
        found.retain(|v| !v.contains("${"));
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
        let replaced = moved(server, &suffix, i, &arg, &found[0], &mut used, notes);
        out.push(replaced);
    }
    out
}

/// `arg` (the `index`th argument) with the value of each secret `key=value` pair inside it (a
/// URL query's `token=…`, a connection string's `password=…`:
/// [`crate::redact::embedded_secrets`]) replaced by a reference to a variable named after
/// `server` and the key; a note for each says to set it. A value that holds a `${` reference
/// already stays.
fn embedded_moved(
    server: &str,
    index: usize,
    arg: String,
    used: &mut BTreeSet<String>,
    notes: &mut Vec<String>,
) -> String {
    let pairs: Vec<_> = crate::redact::embedded_secrets(&arg)
        .into_iter()
        .filter(|pair| !pair.value.contains("${"))
        .map(|pair| (pair.key.to_owned(), pair.span))
        .collect();
    if pairs.is_empty() {
        return arg;
    }
    let mut out = arg.clone();
    // From the last pair back, so the earlier spans still point at their values.
    for (key, span) in pairs.into_iter().rev() {
        let reference = reference_to_new_var(server, &key, index, used, notes);
        out.replace_range(span, &reference);
    }
    out
}

/// `arg` (the `index`th argument) with `secret` in it replaced by a reference to the variable
/// named after `server` and `suffix` ([`reference_to_new_var`]).
fn moved(
    server: &str,
    suffix: &str,
    index: usize,
    arg: &str,
    secret: &str,
    used: &mut BTreeSet<String>,
    notes: &mut Vec<String>,
) -> String {
    arg.replace(
        secret,
        &reference_to_new_var(server, suffix, index, used, notes),
    )
}

/// `${VAR}` for a new variable named after `server` and `suffix` (made unique among `used`),
/// with the note saying to set it to the secret that was written in `args[index]`.
fn reference_to_new_var(
    server: &str,
    suffix: &str,
    index: usize,
    used: &mut BTreeSet<String>,
    notes: &mut Vec<String>,
) -> String {
    let base = moved_var(server, suffix);
    let mut var = base.clone();
    let mut n = 2;
    while !used.insert(var.clone()) {
        var = format!("{base}_{n}");
        n += 1;
    }
    notes.push(format!(
        "set {var} in the proxy's environment to the secret that was written in args[{index}] (not copied here)"
    ));
    format!("${{{var}}}")
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
        let all = notes.join("\n");
        assert_eq!(notes.len(), 10, "{all}");
        for secret in [
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
        ] {
            assert!(!all.contains(secret), "{all}");
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
        assert!(!notes[0].contains("hunter2"), "{notes:?}");
    }
}
