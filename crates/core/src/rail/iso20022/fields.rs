//! The values a bank file carries, checked and written the way the
//! ISO 20022 schemas and the banks' character sets allow.

/// An IBAN: two letters, two check digits, up to 30 letters and digits, and
/// the ISO 13616 mod-97 check. Spaces are not allowed (write it compact).
pub fn iban_ok(iban: &str) -> bool {
    let b = iban.as_bytes();
    if !(15..=34).contains(&b.len())
        || !b[..2].iter().all(u8::is_ascii_uppercase)
        || !b[2..4].iter().all(u8::is_ascii_digit)
        || !b[4..].iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        return false;
    }
    let mut rem: u32 = 0;
    for &c in b[4..].iter().chain(&b[..4]) {
        let v = if c.is_ascii_digit() { u32::from(c - b'0') } else { u32::from(c - b'A') + 10 };
        rem = if v >= 10 { (rem * 100 + v) % 97 } else { (rem * 10 + v) % 97 };
    }
    rem == 1
}

/// A BIC (ISO 9362): 4 letters or digits, a country, 2 letters or digits,
/// and an optional branch of 3.
pub fn bic_ok(bic: &str) -> bool {
    let b = bic.as_bytes();
    (b.len() == 8 || b.len() == 11)
        && b[..4].iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && b[4..6].iter().all(u8::is_ascii_uppercase)
        && b[6..].iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// A party name a bank takes: 1 to 140 characters of [`latin`]'s set.
pub fn name_ok(name: &str) -> bool {
    !name.trim().is_empty() && name.chars().count() <= 140 && latin(name) == name
}

/// An account number in a scheme other than IBAN (`Othr/Id`, Max34Text):
/// 1 to 34 letters, digits and `-`.
pub fn other_account_ok(id: &str) -> bool {
    (1..=34).contains(&id.len()) && id.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
}

/// `text` in the character set banks take in payment files (the EPC's
/// SEPA set: Latin letters and digits, space and `/ - ? : ( ) . , ' +`):
/// any other character becomes `.`. The agent's reference is data from
/// outside; what reaches the bank is always this subset.
pub fn latin(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || " /-?:().,'+".contains(c) { c } else { '.' }).collect()
}

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
    fn ibans_are_checked_by_mod_97() {
        for ok in
            ["DE89370400440532013000", "GB82WEST12345698765432", "FR1420041010050500013M02606", "NL91ABNA0417164300"]
        {
            assert!(iban_ok(ok), "{ok}");
        }
        for bad in [
            "DE89370400440532013001",
            "de89370400440532013000",
            "DE89 3704 0044 0532 0130 00",
            "DE8937040044",
            "",
            "XX00",
        ] {
            assert!(!iban_ok(bad), "{bad}");
        }
    }

    #[test]
    fn bics() {
        assert!(bic_ok("COBADEFFXXX") && bic_ok("DEUTDEFF") && bic_ok("NWBKGB2L"));
        assert!(!bic_ok("COBADEFFXX") && !bic_ok("cobadeff") && !bic_ok("COBA1EFF"));
    }

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
    fn text_for_the_bank_is_the_latin_subset() {
        assert_eq!(latin("Invoice 1842 – «urgent» & co"), "Invoice 1842 . .urgent. . co");
        assert!(name_ok("Northwind Traders Ltd."));
        assert!(!name_ok("Nørthwind") && !name_ok("  ") && !name_ok(&"x".repeat(141)));
        assert_eq!(escape("a<b&'c'"), "a&lt;b&amp;&apos;c&apos;");
    }
}
