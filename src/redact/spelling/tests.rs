use super::*;
use proptest::prelude::*;

const R: &str = "[redacted]";

#[test]
fn escapes_of_every_kind_are_seen_through() {
    let secret = ["Pässword/\"A🎉"];
    for text in [
        r#"x P\u00e4ssword\/\"\u0041\ud83c\udf89 y"#,
        r#"x P\u00C4ssword/\"A\uD83C\uDF89 y"#.replace("C4", "e4").as_str(),
        r#"x P\\u00e4ssword\\/\\\"\\u0041\\ud83c\\udf89 y"#,
        "x Pässword/\"A🎉 y",
    ] {
        assert!(holds_spelled(text, &secret), "{text}");
        assert_eq!(
            replace_spelled(text, &secret, R).as_deref(),
            Some("x [redacted] y"),
            "{text}"
        );
    }
}

#[test]
fn the_rest_of_the_text_and_its_escapes_stay() {
    let text = r#"{\"t\": \"P\u00e4ss1234\", \"n\": \"a\nb \u00e9\"}"#;
    assert_eq!(
        replace_spelled(text, &["Päss1234"], R).as_deref(),
        Some(r#"{\"t\": \"[redacted]\", \"n\": \"a\nb \u00e9\"}"#)
    );
    assert_eq!(replace_spelled(text, &["Pöss1234"], R), None);
    assert_eq!(
        replace_spelled("a lone \\ud83c here", &["here"], R).as_deref(),
        Some("a lone \\ud83c [redacted]")
    );
}

#[test]
fn a_backslash_in_the_secret_is_found_as_written_and_escaped() {
    let secret = ["back\\slash1234"];
    for text in [
        "back\\slash1234",
        "back\\\\slash1234",
        "back\\u005cslash1234",
    ] {
        assert_eq!(
            replace_spelled(text, &secret, R).as_deref(),
            Some(R),
            "{text}"
        );
    }
}

#[test]
fn ordinary_escapes_are_not_suspicious() {
    let a = Alphabet::of(["Pässword1234"]);
    assert!(!a.suspicious(r#"line 1\nline 2\t\"quoted\" \/ \u0007"#));
    assert!(!a.suspicious("no escapes at all"));
    for text in [
        r"\u00e4",
        r"\u00E4",
        r"\\n",
        r"\u005c",
        r"\ud83c",
        "end \\",
        r"\u0041\u0050",
    ] {
        assert!(a.suspicious(text), "{text}");
    }
    assert!(Alphabet::of(["a\"b/c"]).suspicious(r#"\""#));
    assert!(Alphabet::of(["a\"b/c"]).suspicious(r"\/"));
}

/// A character of a secret, spelled one way among those JSON allows.
fn spell(c: char, choice: u8) -> String {
    let hex = |u: u16, upper: bool| {
        if upper {
            format!("\\u{u:04X}")
        } else {
            format!("\\u{u:04x}")
        }
    };
    let short = match c {
        '"' => Some("\\\""),
        '\\' => Some("\\\\"),
        '/' => Some("\\/"),
        '\n' => Some("\\n"),
        _ => None,
    };
    let must_escape = matches!(c, '"' | '\\' | '\n');
    match choice % 4 {
        0 if !must_escape => c.to_string(),
        1 if short.is_some() => short.unwrap().to_owned(),
        n => {
            let mut buf = [0u16; 2];
            c.encode_utf16(&mut buf)
                .iter()
                .map(|&u| hex(u, n == 3))
                .collect()
        }
    }
}

/// Every string in `value`, and in the JSON those strings hold, at any depth.
fn strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => {
            if let Ok(inner) = serde_json::from_str::<serde_json::Value>(s) {
                strings(&inner, out);
            }
            out.push(s.clone());
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
        serde_json::Value::Object(m) => m.iter().for_each(|(k, v)| {
            out.push(k.clone());
            strings(v, out);
        }),
        _ => {}
    }
}

fn secret_chars() -> impl Strategy<Value = Vec<char>> {
    let alphabet = prop::sample::select(vec![
        'a', 'Z', '0', '9', '-', 'ä', 'é', '"', '\\', '/', '\n', '🎉', '日', ' ',
    ]);
    prop::collection::vec(alphabet, 4..12)
}

proptest! {
    /// For random secrets written with random escapes, as a string of the answer or inside JSON
    /// held by one: what `redact_json` leaves holds no secret once decoded, at any depth.
    #[test]
    fn no_spelling_of_a_secret_survives(
        chars in secret_chars(),
        choices in prop::collection::vec(any::<u8>(), 12),
        nested in any::<bool>(),
    ) {
        let secret: String = chars.iter().collect();
        let spelled: String = chars.iter().zip(&choices).map(|(&c, &n)| spell(c, n)).collect();
        let text_json = if nested {
            // JSON in a text: the spelled secret is a string of the inner document.
            let inner = format!("{{\"MY_TOKEN\": \"{spelled}\", \"n\": \"a\\nb\"}}");
            serde_json::to_string(&inner).unwrap()
        } else {
            format!("\"before {spelled} after\"")
        };
        let raw = format!("{{\"content\":[{{\"type\":\"text\",\"text\":{text_json}}}]}}");
        let s = crate::redact::SecretValues::new([secret.clone()]);
        prop_assert!(s.found_in(&raw), "{raw}");
        let mut v: serde_json::Value = serde_json::from_str(&raw).unwrap();
        prop_assert!(s.redact_json(&mut v));
        let mut all = Vec::new();
        strings(&v, &mut all);
        for text in &all {
            prop_assert!(!text.contains(&secret), "{text} from {raw}");
        }
        let text = v["content"][0]["text"].as_str().unwrap();
        if nested {
            let inner: serde_json::Value = serde_json::from_str(text).unwrap();
            prop_assert_eq!(inner, serde_json::json!({"MY_TOKEN": R, "n": "a\nb"}));
        } else {
            prop_assert_eq!(text, "before [redacted] after");
        }
    }
}
