//! The part of CBOR (RFC 8949) that WebAuthn uses: an attestation object and
//! a COSE key are maps of integers, text and byte strings, in definite
//! lengths (CTAP2's canonical form). Anything else — indefinite lengths,
//! tags, floats, nesting deeper than [`MAX_DEPTH`] — is refused rather than
//! skipped: what is not understood is not trusted.

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
const MAX_DEPTH: usize = 8;

/// Decodes one item from the start of `bytes`; returns it and the bytes
/// after it (authenticator data carries a COSE key followed by extensions).
pub fn decode_prefix(bytes: &[u8]) -> Result<(Value, &[u8]), CborError> {
    let mut reader = Reader { bytes, at: 0 };
    let value = reader.item(0)?;
    Ok((value, &bytes[reader.at..]))
}

/// Decodes exactly one item: trailing bytes are an error.
pub fn decode(bytes: &[u8]) -> Result<Value, CborError> {
    match decode_prefix(bytes)? {
        (value, []) => Ok(value),
        _ => Err(CborError("trailing bytes")),
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CborError> {
        let end = self.at.checked_add(n).filter(|end| *end <= self.bytes.len()).ok_or(CborError("truncated"))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    /// The argument of an initial byte's additional information.
    fn argument(&mut self, info: u8) -> Result<u64, CborError> {
        Ok(match info {
            0..=23 => u64::from(info),
            24 => u64::from(self.take(1)?[0]),
            25 => u64::from(u16::from_be_bytes(self.take(2)?.try_into().expect("2 bytes"))),
            26 => u64::from(u32::from_be_bytes(self.take(4)?.try_into().expect("4 bytes"))),
            27 => u64::from_be_bytes(self.take(8)?.try_into().expect("8 bytes")),
            _ => return Err(CborError("indefinite or reserved length")),
        })
    }

    fn length(&mut self, info: u8) -> Result<usize, CborError> {
        let n = self.argument(info)?;
        // Each element takes a byte at least: a larger count is a lie.
        usize::try_from(n).ok().filter(|n| *n <= self.bytes.len() - self.at).ok_or(CborError("length past the end"))
    }

    fn item(&mut self, depth: usize) -> Result<Value, CborError> {
        if depth > MAX_DEPTH {
            return Err(CborError("nested too deeply"));
        }
        let initial = self.take(1)?[0];
        let (major, info) = (initial >> 5, initial & 0x1f);
        Ok(match major {
            0 => Value::Int(i128::from(self.argument(info)?)),
            1 => Value::Int(-1 - i128::from(self.argument(info)?)),
            2 => {
                let n = self.length(info)?;
                Value::Bytes(self.take(n)?.to_vec())
            }
            3 => {
                let n = self.length(info)?;
                let text = std::str::from_utf8(self.take(n)?).map_err(|_| CborError("text is not UTF-8"))?;
                Value::Text(text.to_owned())
            }
            4 => {
                let n = self.length(info)?;
                Value::Array((0..n).map(|_| self.item(depth + 1)).collect::<Result<_, _>>()?)
            }
            5 => {
                let n = self.length(info)?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    let key = self.item(depth + 1)?;
                    if entries.iter().any(|(k, _)| *k == key) {
                        return Err(CborError("a map repeats a key"));
                    }
                    entries.push((key, self.item(depth + 1)?));
                }
                Value::Map(entries)
            }
            7 => match info {
                20 => Value::Bool(false),
                21 => Value::Bool(true),
                22 => Value::Null,
                _ => return Err(CborError("unsupported simple value or float")),
            },
            _ => return Err(CborError("tags are not supported")),
        })
    }
}

/// Encodes `value` (tests build authenticator output with it).
pub fn encode(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out, value);
    out
}

fn head(out: &mut Vec<u8>, major: u8, n: u64) {
    let major = major << 5;
    match n {
        0..=23 => out.push(major | n as u8),
        24..=0xff => out.extend([major | 24, n as u8]),
        0x100..=0xffff => {
            out.push(major | 25);
            out.extend((n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(major | 26);
            out.extend((n as u32).to_be_bytes());
        }
        _ => {
            out.push(major | 27);
            out.extend(n.to_be_bytes());
        }
    }
}

fn write(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Int(i) if *i >= 0 => head(out, 0, *i as u64),
        Value::Int(i) => head(out, 1, (-1 - *i) as u64),
        Value::Bytes(b) => {
            head(out, 2, b.len() as u64);
            out.extend(b);
        }
        Value::Text(t) => {
            head(out, 3, t.len() as u64);
            out.extend(t.as_bytes());
        }
        Value::Array(items) => {
            head(out, 4, items.len() as u64);
            items.iter().for_each(|v| write(out, v));
        }
        Value::Map(entries) => {
            head(out, 5, entries.len() as u64);
            for (k, v) in entries {
                write(out, k);
                write(out, v);
            }
        }
        Value::Bool(b) => out.push(if *b { 0xf5 } else { 0xf4 }),
        Value::Null => out.push(0xf6),
    }
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
    fn what_is_not_understood_is_refused() {
        for (bytes, why) in [
            (&[0x5f, 0x41, 0x00, 0xff][..], "indefinite or reserved length"),
            (&[0x44, 1, 2][..], "length past the end"),
            (&[0x1a, 0x00][..], "truncated"),
            (&[0xc1, 0x00][..], "tags are not supported"),
            (&[0xf9, 0x3c, 0x00][..], "unsupported simple value or float"),
            (&[0xa2, 0x01, 0x01, 0x01, 0x02][..], "a map repeats a key"),
            (&[0x01, 0x02][..], "trailing bytes"),
            (&[0x62, 0xff, 0xfe][..], "text is not UTF-8"),
            (&[0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff][..], "length past the end"),
        ] {
            assert_eq!(decode(bytes), Err(CborError(why)), "{bytes:02x?}");
        }
        let deep = [vec![0x81; MAX_DEPTH + 1], vec![0x00]].concat();
        assert_eq!(decode(&deep), Err(CborError("nested too deeply")));
    }
}
