//! The large-result path: a result's JSON text mapped without parsing all of it. A fill can
//! keep only so many rows ([`Budget::max_object_rows`]), so only that many row items are parsed
//! and the rest only counted; the envelope is the same as mapping the parsed result.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::rows::{map_result, map_result_from};
use super::{Mapped, MappingContext};
use crate::budget::{Budget, LongRows};

/// [`map_outcome`] of `Outcome::Result { result }` where `raw` is `result`'s JSON text, without
/// parsing all of it: when `structuredContent` holds a row array (or an object whose one
/// non-empty array of objects gives the rows), only its first `char_budget / 2 + 2` items are
/// parsed and the rest only counted. [`fill_rows`] can keep no more rows than that (each row
/// after the first costs at least the two-character separator), so the envelope is the same.
/// Anything else is parsed in full.
///
/// `raw` must be valid JSON.
pub fn map_raw_result(raw: &str, ctx: &MappingContext<'_>) -> Mapped {
    let cut = Cut::of(ctx);
    match lazy_result(raw, cut).and_then(|(sub, skipped)| lazy_mapped(&sub, skipped, cut.keep, ctx))
    {
        Some(mapped) => mapped,
        None => {
            let result: Value = serde_json::from_str(raw).expect("a raw result is valid JSON");
            map_result(&result, ctx)
        }
    }
}

/// What the lazy path parses of a row array: the first `keep` items; and the longest item
/// it may only count, in bytes of JSON text (a longer one might be a row too long for the
/// budget on its own, which `long_rows = "split"` cuts into several: the result is then
/// parsed in full).
#[derive(Debug, Clone, Copy)]
struct Cut {
    keep: usize,
    longest: usize,
}

impl Cut {
    fn of(ctx: &MappingContext<'_>) -> Cut {
        let budget = &ctx.budget;
        let longest = match ctx.text.long_rows {
            LongRows::Keep => usize::MAX,
            // The row of an item of n bytes has at most 5n + 6 characters: rendering drops
            // quotes and braces and decodes escapes, but `{"value": …}` adds `value=` to an
            // item that is not an object, and serde_json writes a number such as `1E9` as
            // `1000000000.0`. A token is at least one byte, so bytes bound tokens too.
            LongRows::Split => budget.surely_fitting_bytes().saturating_sub(6) / 5,
        };
        Cut {
            keep: lazy_row_limit(budget),
            longest,
        }
    }
}

/// How many row items the lazy path parses: one more than a fill can keep when that is
/// provable ([`Budget::max_object_rows`]); for a token budget alone, two more than its tokens
/// (a row costs at least one token in practice; [`lazy_mapped`] checks it did).
fn lazy_row_limit(budget: &Budget) -> usize {
    match (budget.max_object_rows(), budget.tokens) {
        (Some(rows), _) => rows + 1,
        (None, Some(t)) => t.limit.saturating_add(2),
        (None, None) => usize::MAX,
    }
}

/// Maps the cut `substitute` of a result of which `skipped` row items were only counted;
/// `None` when the fill kept every parsed item (`limit` of them), so that it might have kept
/// some of the skipped ones too: the result is then parsed in full.
fn lazy_mapped(
    substitute: &Value,
    skipped: u64,
    limit: usize,
    ctx: &MappingContext<'_>,
) -> Option<Mapped> {
    let (mut mapped, kept) = map_result_from(substitute, ctx, 0);
    if skipped > 0 && kept >= limit as u64 {
        return None;
    }
    mapped.envelope.omitted = mapped.envelope.omitted.saturating_add(skipped);
    Some(mapped)
}

/// [`map_raw_result`] for a whole JSON-RPC response line `{"jsonrpc":"2.0","id":…,"result":…}`
/// (members in any order) that has not been parsed or validated yet: one pass over the line
/// validates it and maps its `result` lazily. `None` when the line is not valid JSON, is not
/// a plain success response (an `error` or `method` member, a `jsonrpc` other than `"2.0"`, an
/// unknown or repeated member), or its result needs parsing in full; the caller then parses
/// the line in full and maps it as usual.
pub fn map_raw_response(line: &str, ctx: &MappingContext<'_>) -> Option<Mapped> {
    // A small line of a common shape: no tree at all.
    if let Some(mapped) = super::fast::map_small_response(line, ctx) {
        return Some(mapped);
    }
    let mut de = serde_json::Deserializer::from_str(line);
    let cut = Cut::of(ctx);
    let (substitute, skipped) = ResponseSeed(cut).deserialize(&mut de).ok()?;
    de.end().ok()?;
    lazy_mapped(&substitute, skipped, cut.keep, ctx)
}

/// A response object whose `result` goes through [`ResultSeed`].
struct ResponseSeed(Cut);

impl<'de> DeserializeSeed<'de> for ResponseSeed {
    type Value = (Value, u64);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ResponseSeed {
    type Value = (Value, u64);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC response")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let (mut version, mut id, mut result) = (false, false, None);
        while let Some(key) = access.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "jsonrpc" if !version => {
                    version = true;
                    if access.next_value::<Cow<'de, str>>()? != "2.0" {
                        return Err(give_up());
                    }
                }
                "id" if !id => {
                    id = true;
                    access.next_value::<serde::de::IgnoredAny>()?;
                }
                "result" if result.is_none() => {
                    result = Some(access.next_value_seed(ResultSeed(self.0))?);
                }
                _ => return Err(give_up()),
            }
        }
        match result {
            Some(result) if version && id => Ok(result),
            _ => Err(give_up()),
        }
    }
}

/// A result equivalent to `raw` for [`map_result`] within `budget`, and how many rows it leaves
/// out, built in one pass over `raw`; `None` when the shortcut does not apply (then `raw` is
/// parsed in full); `limit` row items are parsed.
fn lazy_result(raw: &str, cut: Cut) -> Option<(Value, u64)> {
    let mut de = serde_json::Deserializer::from_str(raw);
    let out = ResultSeed(cut).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(out)
}

/// Why the shortcut gives up (the whole result is then parsed as usual).
fn give_up<E: serde::de::Error>() -> E {
    E::custom("parse in full")
}

/// The result object with `structuredContent`'s rows cut as `.0` says.
struct ResultSeed(Cut);

impl<'de> DeserializeSeed<'de> for ResultSeed {
    type Value = (Value, u64);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ResultSeed {
    type Value = (Value, u64);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut map = Map::new();
        let mut skipped = 0;
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(give_up());
            }
            let value = if key == "structuredContent" {
                let (value, n) = LazySeed::Rows(self.0).deserialize_into(&mut access)?;
                skipped = n;
                value
            } else {
                access.next_value::<Value>()?
            };
            map.insert(key, value);
        }
        if skipped > 0 && map.get("isError") == Some(&Value::Bool(true)) {
            return Err(give_up());
        }
        Ok((Value::Object(map), skipped))
    }
}

/// `structuredContent` (`Rows`) or one of its members (`Member`), with row arrays cut.
#[derive(Clone, Copy)]
enum LazySeed {
    Rows(Cut),
    Member(Cut),
}

/// What a [`LazySeed`] read: a cut array, or a value with how many rows it leaves out.
enum Lazy {
    Cut(CutArray),
    Value(Value, u64),
}

impl LazySeed {
    fn deserialize_into<'de, A: MapAccess<'de>>(
        self,
        access: &mut A,
    ) -> Result<(Value, u64), A::Error> {
        Ok(match access.next_value_seed(self)? {
            Lazy::Cut(cut) => (Value::Array(cut.items), cut.skipped),
            Lazy::Value(v, n) => (v, n),
        })
    }
}

impl<'de> DeserializeSeed<'de> for LazySeed {
    type Value = Lazy;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Lazy, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for LazySeed {
    type Value = Lazy;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::Bool(v), 0))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::from(v), 0))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::from(v), 0))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::from(v), 0))
    }
    fn visit_str<E>(self, v: &str) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::String(v.to_owned()), 0))
    }
    fn visit_string<E>(self, v: String) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::String(v), 0))
    }
    fn visit_unit<E>(self) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::Null, 0))
    }
    fn visit_none<E>(self) -> Result<Lazy, E> {
        Ok(Lazy::Value(Value::Null, 0))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Lazy, A::Error> {
        let keep = match self {
            LazySeed::Rows(keep) | LazySeed::Member(keep) => keep,
        };
        CutSeed(keep).visit_seq(seq).map(Lazy::Cut)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Lazy, A::Error> {
        let keep = match self {
            LazySeed::Member(_) => {
                let value =
                    Value::deserialize(serde::de::value::MapAccessDeserializer::new(access))?;
                return Ok(Lazy::Value(value, 0));
            }
            LazySeed::Rows(keep) => keep,
        };
        // The object rule: rows come from its one non-empty array of objects, if exactly one.
        let mut members: Vec<(String, Lazy)> = Vec::new();
        while let Some(key) = access.next_key::<String>()? {
            // A number (not an object): the full parse reads it.
            let number = crate::numbers::is_number_token(&key);
            if number || members.iter().any(|(k, _)| *k == key) {
                return Err(give_up());
            }
            let value = access.next_value_seed(LazySeed::Member(keep))?;
            members.push((key, value));
        }
        let qualifies = |v: &Lazy| matches!(v, Lazy::Cut(c) if c.all_objects && c.total > 0);
        let qualifying = members.iter().filter(|(_, v)| qualifies(v)).count();
        let mut map = Map::new();
        let mut skipped = 0;
        for (key, value) in members {
            let value = match value {
                Lazy::Cut(cut) if qualifying == 1 && cut.all_objects && cut.total > 0 => {
                    skipped = cut.skipped;
                    Value::Array(cut.items)
                }
                Lazy::Cut(cut) if cut.skipped == 0 => Value::Array(cut.items),
                // A cut array that gives no rows: the object needs it whole.
                Lazy::Cut(_) => return Err(give_up()),
                Lazy::Value(v, _) => v,
            };
            map.insert(key, value);
        }
        Ok(Lazy::Value(Value::Object(map), skipped))
    }
}

/// The first items of an array, parsed; the rest counted and checked for being objects.
struct CutArray {
    items: Vec<Value>,
    skipped: u64,
    total: u64,
    all_objects: bool,
}

struct CutSeed(Cut);

impl<'de> DeserializeSeed<'de> for CutSeed {
    type Value = CutArray;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<CutArray, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for CutSeed {
    type Value = CutArray;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CutArray, A::Error> {
        let mut cut = CutArray {
            items: Vec::new(),
            skipped: 0,
            total: 0,
            all_objects: true,
        };
        while cut.items.len() < self.0.keep {
            let Some(item) = seq.next_element::<Value>()? else {
                return Ok(cut);
            };
            cut.all_objects &= item.is_object();
            cut.total += 1;
            cut.items.push(item);
        }
        while let Some(item) = seq.next_element::<&'de RawValue>()? {
            if item.get().len() > self.0.longest {
                return Err(give_up());
            }
            cut.all_objects &= item.get().starts_with('{');
            cut.total += 1;
            cut.skipped += 1;
        }
        Ok(cut)
    }
}
