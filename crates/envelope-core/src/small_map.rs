//! Member lookups in the small JSON objects of a message (a request's `params`, its `_meta`, a
//! content block) without hashing the member's name.
//!
//! `serde_json::Map` is an `IndexMap` with SipHash here (the `preserve_order` feature): every
//! `get`, `contains_key` or `remove` hashes its key, about 250 instructions, where comparing
//! the two or three keys of a small object is a few dozen. A small `tools/call` made about
//! fifteen such lookups (callgrind, 2026-12-02). The answers are those of the map's own
//! methods: the keys of a map are unique, so the one a scan finds is the one `get` finds.

use serde_json::{Map, Value};

/// Objects with at most this many members are scanned; larger ones are looked up by hash.
pub const SCAN_MAX: usize = 8;

/// `map.get(key)`.
pub fn get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() > SCAN_MAX {
        return map.get(key);
    }
    map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
}

/// `map.get_mut(key)`.
pub fn get_mut<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Value> {
    if map.len() > SCAN_MAX {
        return map.get_mut(key);
    }
    map.iter_mut()
        .find(|(k, _)| k.as_str() == key)
        .map(|(_, v)| v)
}

/// `map.contains_key(key)`.
pub fn contains(map: &Map<String, Value>, key: &str) -> bool {
    get(map, key).is_some()
}

/// `map.remove(key)`: hashed only when the member is there (removing it keeps the map's own
/// order rule).
pub fn remove(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    if map.len() <= SCAN_MAX && !contains(map, key) {
        return None;
    }
    map.remove(key)
}

/// `map.insert(key, value)` for a member that is usually there already: its value replaced
/// in place (where `insert` keeps it too), else inserted.
pub fn set(map: &mut Map<String, Value>, key: &str, value: Value) {
    match get_mut(map, key) {
        Some(slot) => *slot = value,
        None => {
            map.insert(key.to_owned(), value);
        }
    }
}

/// `value.get(key)` for a member name: `None` unless `value` is an object.
pub fn member<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) => get(map, key),
        _ => None,
    }
}

/// `value.pointer("/a/b")` for a path of member names (`["a", "b"]`), each looked up with
/// [`get`]: `None` unless every step is an object with that member (an array is not indexed). `Value::pointer` splits
/// its text and copies each step (twice, to undo `~1` and `~0`): about 1,000 instructions for
/// `/params/_meta/progressToken`, on every request of `serve --http` (callgrind, 2026-12-04).
pub fn path<'a>(value: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().try_fold(value, |at, key| member(at, key))
}

/// [`path`], mutable: `value.pointer_mut("/a/b")` for a path of member names.
pub fn path_mut<'a>(value: &'a mut Value, keys: &[&str]) -> Option<&'a mut Value> {
    keys.iter().try_fold(value, |at, key| match at {
        Value::Object(map) => get_mut(map, key),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn maps() -> Vec<Map<String, Value>> {
        let mut big = Map::new();
        for i in 0..20 {
            big.insert(format!("k{i}"), json!(i));
        }
        big.insert("name".into(), json!("n"));
        let Value::Object(small) = json!({"name": "t", "arguments": {"a": 1}, "": 0}) else {
            unreachable!()
        };
        vec![Map::new(), small, big]
    }

    #[test]
    fn the_same_answers_as_the_maps_own_methods() {
        for map in maps() {
            for key in ["name", "arguments", "", "k3", "k19", "missing", "nam"] {
                assert_eq!(get(&map, key), map.get(key), "{key}");
                assert_eq!(contains(&map, key), map.contains_key(key), "{key}");
                assert_eq!(member(&Value::Object(map.clone()), key), map.get(key));
                let (mut a, mut b) = (map.clone(), map.clone());
                assert_eq!(get_mut(&mut a, key), b.get_mut(key));
                assert_eq!(remove(&mut a, key), b.remove(key), "{key}");
                assert_eq!(
                    a.iter().collect::<Vec<_>>(),
                    b.iter().collect::<Vec<_>>(),
                    "{key}"
                );
                set(&mut a, key, json!("v"));
                b.insert(key.to_owned(), json!("v"));
                assert_eq!(
                    a.iter().collect::<Vec<_>>(),
                    b.iter().collect::<Vec<_>>(),
                    "{key}"
                );
            }
        }
        assert_eq!(member(&json!([1]), "name"), None);
    }

    #[test]
    fn a_path_finds_what_the_json_pointer_finds() {
        let mut value = json!({"params": {"_meta": {"progressToken": 7}, "a": [1]}, "x": 1});
        for (keys, pointer) in [
            (
                &["params", "_meta", "progressToken"][..],
                "/params/_meta/progressToken",
            ),
            (&["params", "_meta"], "/params/_meta"),
            (&["x", "y"], "/x/y"),
            (&["missing"], "/missing"),
            (&[], ""),
        ] {
            assert_eq!(path(&value, keys), value.pointer(pointer), "{pointer}");
            let expected = value.clone().pointer_mut(pointer).cloned();
            assert_eq!(path_mut(&mut value, keys).cloned(), expected, "{pointer}");
        }
        // Member names only: an array is not indexed.
        assert_eq!(path(&value, &["params", "a", "0"]), None);
        *path_mut(&mut value, &["params", "_meta", "progressToken"]).unwrap() = json!("t");
        assert_eq!(value["params"]["_meta"]["progressToken"], "t");
    }
}
