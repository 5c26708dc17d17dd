//! The part of CBOR (RFC 8949) that WebAuthn uses, read with the `ciborium`
//! crate and then held to CTAP2's form: an attestation object and a COSE key
//! are maps of integers, text and byte strings, in definite lengths with the
//! shortest heads. Anything else — indefinite lengths, longer heads than
//! needed, tags, floats, a repeated map key, nesting deeper than
//! [`MAX_DEPTH`], more than [`MAX_BYTES`] of input or [`MAX_ITEMS`] entries
//! in one array or map — is refused rather than skipped: what is not
//! understood is not trusted.
//!
//! The size limits are checked before anything is decoded, so a hostile
//! registration costs a bounded amount of work, and the passkey code calls
//! this before it opens any database transaction (docs/SECURITY.md,
//! "Oversized passkey data").

use std::fmt;

/// A decoded CBOR item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// An unsigned or negative integer (major types 0 and 1).
    Int(i128),
    Bytes(Vec<u8>),
    Text(String),
    Array(Vec<Value>),
    /// Entries in the order they came.
    Map(Vec<(Value, Value)>),
    Bool(bool),
    Null,
}

impl Value {
    /// The value under `key` in a map.
    pub fn get(&self, key: &Value) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn get_text(&self, key: &str) -> Option<&Value> {
        self.get(&Value::Text(key.to_owned()))
    }

    pub fn get_int(&self, key: i128) -> Option<&Value> {
        self.get(&Value::Int(key))
    }

    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i128> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            Value::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// Why bytes are not the CBOR this module reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CborError(&'static str);

impl fmt::Display for CborError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CBOR: {}", self.0)
    }
}

impl std::error::Error for CborError {}

/// How deeply items may nest (an attestation object needs 3).
pub const MAX_DEPTH: usize = 8;
/// The most bytes decoded at all (an attestation object with attestation
/// `none` is a few hundred).
pub const MAX_BYTES: usize = 8 * 1024;
/// The most entries of one array or map (a COSE key has five).
pub const MAX_ITEMS: usize = 32;

/// Decodes one item from the start of `bytes`; returns it and the bytes
/// after it (authenticator data carries a COSE key followed by extensions).
pub fn decode_prefix(bytes: &[u8]) -> Result<(Value, &[u8]), CborError> {
    if bytes.len() > MAX_BYTES {
        return Err(CborError("too large"));
    }
    let mut rest = bytes;
    let raw: ciborium::Value = ciborium::de::from_reader_with_recursion_limit(&mut rest, MAX_DEPTH + 1)
        .map_err(|e| CborError(read_error(&e)))?;
    let item = &bytes[..bytes.len() - rest.len()];
    let value = strict(raw, 0)?;
    // Re-encoding must give the very bytes read: definite lengths and the
    // shortest heads, as CTAP2 writes them.
    if encode(&value) != item {
        return Err(CborError("not in CTAP2's definite, shortest form"));
    }
    Ok((value, rest))
}

/// Decodes exactly one item: trailing bytes are an error.
pub fn decode(bytes: &[u8]) -> Result<Value, CborError> {
    match decode_prefix(bytes)? {
        (value, []) => Ok(value),
        _ => Err(CborError("trailing bytes")),
    }
}

fn read_error<T: fmt::Debug>(e: &ciborium::de::Error<T>) -> &'static str {
    match e {
        ciborium::de::Error::Io(_) => "truncated",
        ciborium::de::Error::Syntax(_) => "malformed",
        ciborium::de::Error::Semantic(..) => "malformed",
        ciborium::de::Error::RecursionLimitExceeded => "nested too deeply",
    }
}

/// The crate's value held to what WebAuthn uses.
fn strict(raw: ciborium::Value, depth: usize) -> Result<Value, CborError> {
    use ciborium::Value as Raw;
    if depth > MAX_DEPTH {
        return Err(CborError("nested too deeply"));
    }
    Ok(match raw {
        Raw::Integer(i) => Value::Int(i128::from(i)),
        Raw::Bytes(b) => Value::Bytes(b),
        Raw::Text(t) => Value::Text(t),
        Raw::Bool(b) => Value::Bool(b),
        Raw::Null => Value::Null,
        Raw::Array(items) => {
            if items.len() > MAX_ITEMS {
                return Err(CborError("too many items"));
            }
            Value::Array(items.into_iter().map(|v| strict(v, depth + 1)).collect::<Result<_, _>>()?)
        }
        Raw::Map(entries) => {
            if entries.len() > MAX_ITEMS {
                return Err(CborError("too many items"));
            }
            let mut map: Vec<(Value, Value)> = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                let key = strict(k, depth + 1)?;
                if map.iter().any(|(seen, _)| *seen == key) {
                    return Err(CborError("a map repeats a key"));
                }
                map.push((key, strict(v, depth + 1)?));
            }
            Value::Map(map)
        }
        Raw::Tag(..) => return Err(CborError("tags are not supported")),
        Raw::Float(_) => return Err(CborError("floats are not supported")),
        _ => return Err(CborError("unsupported simple value")),
    })
}

fn raw(value: &Value) -> ciborium::Value {
    use ciborium::Value as Raw;
    match value {
        Value::Int(i) => Raw::Integer(ciborium::value::Integer::try_from(*i).expect("CBOR integers fit 65 bits")),
        Value::Bytes(b) => Raw::Bytes(b.clone()),
        Value::Text(t) => Raw::Text(t.clone()),
        Value::Array(items) => Raw::Array(items.iter().map(raw).collect()),
        Value::Map(entries) => Raw::Map(entries.iter().map(|(k, v)| (raw(k), raw(v))).collect()),
        Value::Bool(b) => Raw::Bool(*b),
        Value::Null => Raw::Null,
    }
}

/// Encodes `value` in definite lengths with the shortest heads (tests build
/// authenticator output with it; decoding compares against it).
pub fn encode(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::ser::into_writer(&raw(value), &mut out).expect("writing to a Vec cannot fail");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_encoded_decodes_the_same() {
        let value = Value::Map(vec![
            (Value::Int(1), Value::Int(2)),
            (Value::Int(-7), Value::Int(-70000)),
            (Value::Text("fmt".into()), Value::Text("none".into())),
            (Value::Int(-2), Value::Bytes(vec![7; 300])),
            (Value::Text("a".into()), Value::Array(vec![Value::Bool(true), Value::Null, Value::Int(1 << 40)])),
        ]);
        assert_eq!(decode(&encode(&value)), Ok(value));
    }

    #[test]
    fn known_bytes_decode() {
        // RFC 8949 appendix A: -1, 1000000, h'01020304', {"a": 1}.
        assert_eq!(decode(&[0x20]), Ok(Value::Int(-1)));
        assert_eq!(decode(&[0x1a, 0x00, 0x0f, 0x42, 0x40]), Ok(Value::Int(1_000_000)));
        assert_eq!(decode(&[0x44, 1, 2, 3, 4]), Ok(Value::Bytes(vec![1, 2, 3, 4])));
        assert_eq!(decode(&[0xa1, 0x61, b'a', 0x01]), Ok(Value::Map(vec![(Value::Text("a".into()), Value::Int(1))])));
    }

    #[test]
    fn a_prefix_leaves_what_follows() {
        let (value, rest) = decode_prefix(&[0xa1, 0x01, 0x02, 0xff, 0x07]).expect("a map, then two bytes");
        assert_eq!(value, Value::Map(vec![(Value::Int(1), Value::Int(2))]));
        assert_eq!(rest, &[0xff, 0x07]);
    }

    #[test]
    fn what_is_not_understood_is_refused() {
        for (bytes, why) in [
            (&[0x5f, 0x41, 0x00, 0xff][..], "not in CTAP2's definite, shortest form"),
            (&[0x18, 0x01][..], "not in CTAP2's definite, shortest form"),
            (&[0x44, 1, 2][..], "truncated"),
            (&[0x1a, 0x00][..], "truncated"),
            (&[0xc1, 0x00][..], "tags are not supported"),
            (&[0xf9, 0x3c, 0x00][..], "floats are not supported"),
            (&[0xa2, 0x01, 0x01, 0x01, 0x02][..], "a map repeats a key"),
            (&[0x01, 0x02][..], "trailing bytes"),
            (&[0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff][..], "truncated"),
        ] {
            assert_eq!(decode(bytes), Err(CborError(why)), "{bytes:02x?}");
        }
        assert!(decode(&[0x62, 0xff, 0xfe]).is_err(), "text is not UTF-8");
        let deep = [vec![0x81; MAX_DEPTH + 1], vec![0x00]].concat();
        assert_eq!(decode(&deep), Err(CborError("nested too deeply")));
    }

    #[test]
    fn sizes_are_bounded_before_decoding() {
        // The 9,000-entry map of the report: refused on its size alone.
        let mut huge = vec![0xb9, 0x23, 0x28];
        for i in 0..9000u16 {
            huge.extend([0x19]);
            huge.extend(i.to_be_bytes());
            huge.push(0x00);
        }
        assert_eq!(decode(&huge), Err(CborError("too large")));
        // Small enough in bytes, too many entries.
        let mut wide = vec![0x98, 40];
        wide.extend([0x00; 40]);
        assert_eq!(decode(&wide), Err(CborError("too many items")));
    }
}
