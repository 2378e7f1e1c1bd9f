//! Numbers kept exactly as a server or client wrote them.
//!
//! The workspace builds serde_json with its `arbitrary_precision` feature: a
//! [`serde_json::Number`] holds the number's text, so an integer beyond 64 bits
//! (`123456789012345678901234567890`) or a long decimal (`0.12345678901234567890`) in a
//! result, an argument or an id is forwarded, rendered and recorded as written. Without it
//! such a number became the nearest `f64` (`1.2345678901234568e29`), and an envelope said
//! `ok` over a changed figure.
//!
//! The feature's one trap: a `deserialize_any` visitor is handed a number that is not a
//! 64-bit integer as a map of one member named [`NUMBER_TOKEN`], whose value is the number's
//! text. `serde_json::Value`'s own visitor knows this; each visitor of ours that reads maps
//! checks for it ([`is_number_token`]).

/// The member name under which serde_json (with `arbitrary_precision`) hands a number that is
/// not a 64-bit integer to a visitor's `visit_map`. Private to serde_json, so
/// `tests::the_token_is_serde_jsons` checks it against the library in use.
pub const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// Whether a map key read by a `visit_map` is [`NUMBER_TOKEN`]: the "map" is a number.
pub fn is_number_token(key: &str) -> bool {
    key == NUMBER_TOKEN
}

/// Whether `n` is written as an integer (an optional `-`, then digits: RFC 8259 section 6
/// without fraction or exponent), whatever its size. MCP ids are strings or integers
/// (MCP 2025-11-25 "Basic: Requests"); `-0` and a 30-digit integer are integers.
pub fn is_integer(n: &serde_json::Number) -> bool {
    let digits = n.as_str().strip_prefix('-').unwrap_or(n.as_str());
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Whether `n` is an integer in value: written as one ([`is_integer`]), or a finite number with
/// no fraction (`1.0`, `1e2`), which JSON Schema's `integer` type accepts too (JSON Schema
/// 2020-12 Validation, section 6.1.1); MCP's schema types an id as `string | integer`.
pub fn is_integral(n: &serde_json::Number) -> bool {
    is_integer(n)
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// The bytes of `n` as serde_json writes it: its text as read (or as made from a Rust
/// number).
pub fn written_len(n: &serde_json::Number) -> usize {
    n.as_str().len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::{Deserializer as _, MapAccess, Visitor};
    use serde_json::{json, Value};

    /// The first key `visit_map` sees for `text`.
    fn first_key(text: &str) -> Option<String> {
        struct FirstKey;
        impl<'de> Visitor<'de> for FirstKey {
            type Value = Option<String>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("anything")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let key = map.next_key::<String>()?;
                map.next_value::<serde::de::IgnoredAny>()?;
                Ok(key)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
        }
        serde_json::Deserializer::from_str(text)
            .deserialize_any(FirstKey)
            .unwrap()
    }

    #[test]
    fn the_token_is_serde_jsons() {
        assert_eq!(first_key("1.5").as_deref(), Some(NUMBER_TOKEN));
        assert_eq!(
            first_key("123456789012345678901234567890").as_deref(),
            Some(NUMBER_TOKEN)
        );
        assert_eq!(first_key("7"), None);
        assert!(is_number_token(NUMBER_TOKEN) && !is_number_token("n"));
    }

    #[test]
    fn numbers_round_trip_as_written() {
        let text = r#"{"big":123456789012345678901234567890,"dec":0.12345678901234567890123,"neg":-0,"e":1e+400}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&value).unwrap(), text);
        assert_eq!(value["big"], json!(123456789012345678901234567890_u128));
    }

    #[test]
    fn integers_are_told_by_their_text() {
        let n = |t: &str| serde_json::from_str::<serde_json::Number>(t).unwrap();
        for t in [
            "0",
            "-0",
            "42",
            "123456789012345678901234567890",
            "-99999999999999999999",
        ] {
            assert!(is_integer(&n(t)), "{t}");
        }
        for t in ["1.0", "1e3", "-1.5E-7"] {
            assert!(!is_integer(&n(t)), "{t}");
        }
        assert_eq!(written_len(&n("0.12345678901234567890123")), 25);
        for t in ["1.0", "1e2", "-3.00", "1E300"] {
            assert!(is_integral(&n(t)), "{t}");
        }
        for t in ["1.5", "1e-2", "1E400"] {
            assert!(!is_integral(&n(t)), "{t}");
        }
    }
}
