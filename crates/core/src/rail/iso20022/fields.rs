//! The values a bank file carries, written the way the ISO 20022 schemas
//! and the banks' character sets allow (the identifiers' checks are the
//! domain's: `countersign_domain::bank`).

pub use crate::domain::bank::{bic_ok, iban_ok, latin, name_ok, other_account_ok};

/// At most `max` characters of `text` (never cut inside a character).
pub fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// `minor` units as the decimal amount an ISO 20022 amount carries, with
/// the currency's exponent (`12345` EUR → `123.45`, JPY → `12345`).
pub fn decimal(minor: u64, exponent: u32) -> String {
    if exponent == 0 {
        return minor.to_string();
    }
    let scale = 10u64.pow(exponent);
    format!("{}.{:0width$}", minor / scale, minor % scale, width = exponent as usize)
}

/// A decimal amount read from a bank document, in minor units of a
/// currency with `exponent` decimals; `None` for a negative, malformed or
/// over-precise amount (`12.345` EUR is not a booking of cents).
pub fn minor_units(amount: &str, exponent: u32) -> Option<u64> {
    let (whole, frac) = amount.trim().split_once('.').unwrap_or((amount.trim(), ""));
    if whole.is_empty() || !whole.bytes().all(|c| c.is_ascii_digit()) || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let frac = frac.trim_end_matches('0');
    if frac.len() > exponent as usize {
        return None;
    }
    let scale = 10u64.checked_pow(exponent)?;
    let fraction: u64 =
        if frac.is_empty() { 0 } else { format!("{frac:0<width$}", width = exponent as usize).parse().ok()? };
    whole.parse::<u64>().ok()?.checked_mul(scale)?.checked_add(fraction)
}

/// Text for an XML element or attribute value.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_round_trip_by_exponent() {
        assert_eq!(decimal(12_345, 2), "123.45");
        assert_eq!(decimal(5, 2), "0.05");
        assert_eq!(decimal(12_345, 0), "12345");
        assert_eq!(decimal(1_234, 3), "1.234");
        for (text, exp, minor) in [
            ("123.45", 2, Some(12_345)),
            ("0.5", 2, Some(50)),
            ("100", 2, Some(10_000)),
            ("12345", 0, Some(12_345)),
            ("12.00", 0, Some(12)),
            ("12.345", 2, None),
            ("-1.00", 2, None),
            ("1,00", 2, None),
            ("", 2, None),
            (".5", 2, None),
        ] {
            assert_eq!(minor_units(text, exp), minor, "{text}");
        }
    }

    #[test]
    fn text_for_xml_is_escaped() {
        assert_eq!(escape("a<b&'c'"), "a&lt;b&amp;&apos;c&apos;");
    }
}
