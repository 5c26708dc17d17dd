//! Bank account identifiers and the text banks take, checked as pure
//! rules: an IBAN (ISO 13616, mod 97), a BIC (ISO 9362), a party name in
//! the banks' character set. The bank-file rail writes with them and the
//! settings check a debtor's account with them.

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
    fn names_in_the_banks_character_set() {
        assert_eq!(latin("Invoice 1842 – «urgent» & co"), "Invoice 1842 . .urgent. . co");
        assert!(name_ok("Northwind Traders Ltd."));
        assert!(!name_ok("Nørthwind") && !name_ok("  ") && !name_ok(&"x".repeat(141)));
        assert!(other_account_ok("000123456789") && !other_account_ok("12 34"));
    }
}
