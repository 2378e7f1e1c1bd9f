//! The one rule for the string values of a client's server entry: an `args` item, an `env`
//! value, a `headers` value. Pure: no I/O.
//!
//! A process argument, an environment value and an HTTP header value are strings, and the
//! proxy's config accepts nothing else there, but client configs are hand-written and often
//! carry `8080` or `true` where a string belongs (the clients' own loaders turn them into
//! strings). So a number or a boolean is written as a string, as JSON spells it (`8080` →
//! `"8080"`, `1.5` → `"1.5"`, `true` → `"true"`), with a note naming the key (never the value:
//! an `env` or header value may be a secret): `converted mcpServers.web.args[1] (a number) to a
//! string: a process argument is a string`. `import` prints these notes on stderr too. `null`,
//! an array or an object has no string form: an error naming the key path.
//!
//! Every JSON importer (`import`'s stdio and remote entries, and `install`, which converts
//! through the same code) uses [`string_value`]; Codex's TOML import
//! (`import/codex.rs`) writes its notes with [`converted_note`].

use serde_json::Value;

use super::{kind, ImportError};

/// Where a string value of a server entry goes; it gives the note its reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    /// An item of `args`.
    Arg,
    /// A value of `env`.
    Env,
    /// A value of a remote entry's `headers`.
    Header,
}

impl Slot {
    /// Why the value must be a string, for the note.
    fn why(self) -> &'static str {
        match self {
            Slot::Arg => "a process argument is a string",
            Slot::Env => "an environment value is a string",
            Slot::Header => "an HTTP header value is a string",
        }
    }
}

/// The note for a value at key path `path` that was `what` (`a number`, `an integer`, `a
/// boolean`, ...) and is now written as a string in `slot`. It names the key, never the value.
pub(super) fn converted_note(path: &str, what: &str, slot: Slot) -> String {
    format!("converted {path} ({what}) to a string: {}", slot.why())
}

/// The string form of `value`, the value at key path `path` (e.g. `mcpServers.git.env.PORT`)
/// in `slot`: a string as it is; a number or a boolean as JSON writes it, with a
/// [`converted_note`] pushed to `notes`.
///
/// Errors: `null`, an array or an object: `{path}: expected a string, found {kind}`.
pub(super) fn string_value(
    value: &Value,
    path: &str,
    slot: Slot,
    notes: &mut Vec<String>,
) -> Result<String, ImportError> {
    let text = match value {
        Value::String(s) => return Ok(s.clone()),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null | Value::Array(_) | Value::Object(_) => {
            return Err(ImportError(format!(
                "{path}: expected a string, found {}",
                kind(value)
            )))
        }
    };
    notes.push(converted_note(path, kind(value), slot));
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_and_booleans_become_strings_with_a_note_naming_the_key() {
        let cases = [
            (json!("8080"), "8080", None),
            (json!(""), "", None),
            (json!(8080), "8080", Some("a number")),
            (json!(-3), "-3", Some("a number")),
            (json!(1.5), "1.5", Some("a number")),
            (
                json!(18446744073709551615_u64),
                "18446744073709551615",
                Some("a number"),
            ),
            (json!(true), "true", Some("a boolean")),
            (json!(false), "false", Some("a boolean")),
        ];
        for (value, text, what) in cases {
            let mut notes = Vec::new();
            let got = string_value(&value, "mcpServers.web.args[1]", Slot::Arg, &mut notes);
            assert_eq!(got.as_deref(), Ok(text), "{value}");
            let expected: Vec<String> = what
                .map(|w| {
                    format!(
                        "converted mcpServers.web.args[1] ({w}) to a string: a process \
                         argument is a string"
                    )
                })
                .into_iter()
                .collect();
            assert_eq!(notes, expected, "{value}");
        }
    }

    #[test]
    fn null_arrays_and_objects_are_errors_naming_the_key() {
        for (value, found) in [
            (json!(null), "null"),
            (json!([1]), "an array"),
            (json!({"a": 1}), "an object"),
        ] {
            let mut notes = Vec::new();
            let err =
                string_value(&value, "servers.db.env.PORT", Slot::Env, &mut notes).unwrap_err();
            let expected = format!("servers.db.env.PORT: expected a string, found {found}");
            assert_eq!(err.0, expected);
            assert!(notes.is_empty());
        }
    }

    #[test]
    fn the_note_never_carries_the_value() {
        let mut notes = Vec::new();
        let value = json!(918273645);
        let text = string_value(&value, "mcpServers.db.env.API_TOKEN", Slot::Env, &mut notes);
        assert_eq!(text.as_deref(), Ok("918273645"));
        assert_eq!(
            notes,
            [
                "converted mcpServers.db.env.API_TOKEN (a number) to a string: an environment \
              value is a string"
            ]
        );
    }
}
