//! Identifiers: Crockford base32 (no I, L, O, U), lower case. Time-ordered
//! ids (`prop_…`, `op_…`) sort by creation time; approval-token `jti`s are
//! random. The randomness is the caller's: nothing here does I/O.

/// Crockford's base32 alphabet, lower case.
pub const CROCKFORD: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// The Crockford character of the low five bits of `b`.
pub fn crockford_char(b: u8) -> char {
    char::from(CROCKFORD[usize::from(b & 31)])
}

/// `prefix_` and 26 characters: 48 bits of `millis` then the low 80 bits of
/// `random`, so ids sort by their time.
pub fn time_ordered_id(prefix: &str, millis: u64, random: u128) -> String {
    let millis = u128::from(millis) & ((1 << 48) - 1);
    let mut value = (millis << 80) | (random & ((1 << 80) - 1));
    let mut chars = [0u8; 26];
    for c in chars.iter_mut().rev() {
        *c = CROCKFORD[(value & 31) as usize];
        value >>= 5;
    }
    format!("{prefix}_{}", std::str::from_utf8(&chars).expect("ascii"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ids_sort_by_time_and_have_a_fixed_shape() {
        let a = time_ordered_id("prop", 1_767_225_600_000, u128::MAX);
        let b = time_ordered_id("prop", 1_767_225_600_001, 0);
        assert!(a < b);
        assert_eq!(a.len(), "prop_".len() + 26);
        assert!(a[5..].bytes().all(|c| CROCKFORD.contains(&c)));
    }

    proptest! {
        #[test]
        fn a_later_millisecond_always_sorts_later(t in 0u64..(1 << 47), r1: u128, r2: u128) {
            prop_assert!(time_ordered_id("op", t, r1) < time_ordered_id("op", t + 1, r2));
        }

        #[test]
        fn every_byte_maps_into_the_alphabet(b: u8) {
            prop_assert!(CROCKFORD.contains(&(crockford_char(b) as u8)));
        }
    }
}
