//! RFC 8785 JSON Canonicalization Scheme, for the values Countersign hashes.
//!
//! Object members are sorted by the UTF-16 code units of their names, strings
//! are escaped exactly as ECMAScript's `JSON.stringify` does, and there is no
//! insignificant whitespace. Canonical requests only ever hold integers, so a
//! non-integer number is refused instead of being formatted by the ES6 number
//! algorithm: a float in a hashed payment request is a bug, not a value.

use serde_json::Value;
use std::fmt::Write;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JcsError {
    #[error("non-integer number {0} cannot be canonicalized")]
    NonIntegerNumber(String),
}

/// Serializes `value` to its canonical bytes.
pub fn to_vec(value: &Value) -> Result<Vec<u8>, JcsError> {
    let mut out = String::new();
    write_value(&mut out, value)?;
    Ok(out.into_bytes())
}

fn write_value(out: &mut String, value: &Value) -> Result<(), JcsError> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                write!(out, "{i}").expect("writing to a String cannot fail");
            } else if let Some(u) = n.as_u64() {
                write!(out, "{u}").expect("writing to a String cannot fail");
            } else {
                return Err(JcsError::NonIntegerNumber(n.to_string()));
            }
        }
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, (name, member)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, name);
                out.push(':');
                write_value(out, member)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32).expect("writing to a String cannot fail"),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn jcs(v: &Value) -> String {
        String::from_utf8(to_vec(v).unwrap()).unwrap()
    }

    #[test]
    fn sorts_members_and_drops_whitespace() {
        let v: Value = serde_json::from_str(r#"{ "b": 1, "a": [ true, null, "x" ], "c": {"z":0,"y":-5} }"#).unwrap();
        assert_eq!(jcs(&v), r#"{"a":[true,null,"x"],"b":1,"c":{"y":-5,"z":0}}"#);
    }

    #[test]
    fn sorts_by_utf16_code_units_not_bytes() {
        // U+10000 is a surrogate pair (0xD800 ...) and sorts before U+FB33 in UTF-16,
        // although its UTF-8 bytes sort after. Example taken from the RFC's rules.
        let v = json!({"\u{fb33}": 1, "\u{10000}": 2, "\u{80}": 3, "1": 4});
        assert_eq!(jcs(&v), "{\"1\":4,\"\u{80}\":3,\"\u{10000}\":2,\"\u{fb33}\":1}");
    }

    #[test]
    fn escapes_like_json_stringify() {
        let v = json!("q\"b\\s\u{8}\u{c}\n\r\t\u{1}\u{1f}\u{7f}\u{2028}é");
        assert_eq!(jcs(&v), "\"q\\\"b\\\\s\\b\\f\\n\\r\\t\\u0001\\u001f\u{7f}\u{2028}é\"");
    }

    #[test]
    fn refuses_floats() {
        let v: Value = serde_json::from_str(r#"{"a": 2500.0}"#).unwrap();
        assert!(matches!(to_vec(&v), Err(JcsError::NonIntegerNumber(_))));
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|i| json!(i)),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(".{0,6}", inner, 0..5).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn canonical_form_is_a_fixed_point(v in arb_json()) {
            let once = to_vec(&v).unwrap();
            let reparsed: Value = serde_json::from_slice(&once).unwrap();
            prop_assert_eq!(&reparsed, &v);
            prop_assert_eq!(to_vec(&reparsed).unwrap(), once);
        }

        #[test]
        fn pretty_printing_does_not_change_the_canonical_form(v in arb_json()) {
            let pretty = serde_json::to_string_pretty(&v).unwrap();
            let reparsed: Value = serde_json::from_str(&pretty).unwrap();
            prop_assert_eq!(to_vec(&reparsed).unwrap(), to_vec(&v).unwrap());
        }
    }
}
