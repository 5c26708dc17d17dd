//! Money: ISO 4217 currencies with their minor-unit exponent, and amounts in
//! minor units that can never be zero, negative or above the deployment's cap.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// ISO 4217 codes Countersign knows the exponent of. A deployment allowlists
/// a subset; a code outside this table can never be configured.
const ISO_4217: &[(&str, u8)] = &[
    ("AED", 2),
    ("AUD", 2),
    ("BHD", 3),
    ("BRL", 2),
    ("CAD", 2),
    ("CHF", 2),
    ("CLP", 0),
    ("CNY", 2),
    ("CZK", 2),
    ("DKK", 2),
    ("EUR", 2),
    ("GBP", 2),
    ("HKD", 2),
    ("HUF", 2),
    ("IDR", 2),
    ("ILS", 2),
    ("INR", 2),
    ("ISK", 0),
    ("JOD", 3),
    ("JPY", 0),
    ("KRW", 0),
    ("KWD", 3),
    ("MXN", 2),
    ("MYR", 2),
    ("NOK", 2),
    ("NZD", 2),
    ("OMR", 3),
    ("PHP", 2),
    ("PLN", 2),
    ("SAR", 2),
    ("SEK", 2),
    ("SGD", 2),
    ("THB", 2),
    ("TND", 3),
    ("TRY", 2),
    ("UGX", 0),
    ("USD", 2),
    ("VND", 0),
    ("XAF", 0),
    ("XOF", 0),
    ("ZAR", 2),
];

/// A known ISO 4217 currency, upper case.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Currency([u8; 3]);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("`{0}` is not an ISO 4217 currency code this deployment knows")]
pub struct UnknownCurrency(pub String);

impl Currency {
    /// Parses a code in any case; the canonical form is upper case.
    pub fn parse(code: &str) -> Result<Self, UnknownCurrency> {
        let upper = code.to_ascii_uppercase();
        ISO_4217
            .iter()
            .find(|(c, _)| *c == upper)
            .map(|(c, _)| {
                let b = c.as_bytes();
                Currency([b[0], b[1], b[2]])
            })
            .ok_or_else(|| UnknownCurrency(code.chars().take(16).collect()))
    }

    pub fn code(&self) -> &str {
        std::str::from_utf8(&self.0).expect("currency codes are ASCII")
    }

    /// Digits after the decimal point: 2 for USD, 0 for JPY and VND, 3 for KWD.
    pub fn exponent(&self) -> u8 {
        ISO_4217
            .iter()
            .find(|(c, _)| c.as_bytes() == self.0)
            .map(|(_, e)| *e)
            .expect("a Currency is only built from the table")
    }

    /// `major` whole units expressed in this currency's minor units.
    pub fn minor_from_major(&self, major: u64) -> u64 {
        major.saturating_mul(10u64.pow(u32::from(self.exponent())))
    }

    /// Parses an amount a person typed in major units (`5,000.00`, `5000`,
    /// `1 250.5`) into minor units: digits with optional thousands separators
    /// (`,`, space, `_`), at most the currency's exponent of decimals, no sign.
    pub fn parse_major(&self, text: &str) -> Result<u64, MajorAmountError> {
        let cleaned: String = text.trim().chars().filter(|c| !matches!(c, ',' | ' ' | '_' | '\u{a0}')).collect();
        let (whole, fraction) = cleaned.split_once('.').unwrap_or((&cleaned, ""));
        let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
        if whole.is_empty() || !digits(whole) || !digits(fraction) || (cleaned.contains('.') && fraction.is_empty()) {
            return Err(MajorAmountError::NotANumber);
        }
        let exp = usize::from(self.exponent());
        if fraction.len() > exp {
            return Err(MajorAmountError::TooManyDecimals(self.exponent()));
        }
        let padded = format!("{whole}{fraction:0<exp$}");
        padded.parse::<u64>().ok().filter(|n| i64::try_from(*n).is_ok()).ok_or(MajorAmountError::TooLarge)
    }

    /// Formats a minor-unit amount with the currency's exponent and thousands
    /// separators: `1,842.50 USD`, `125,000 JPY`.
    pub fn format_minor(&self, minor: u64) -> String {
        format!("{} {}", self.format_amount(minor), self.code())
    }

    /// [`Currency::format_minor`] without the code: `1,842.50`, as a
    /// reviewer types an amount into a form.
    pub fn format_amount(&self, minor: u64) -> String {
        let exp = u32::from(self.exponent());
        let unit = 10u64.pow(exp);
        let whole = group_thousands(minor / unit);
        if exp == 0 {
            whole
        } else {
            format!("{whole}.{:0width$}", minor % unit, width = exp as usize)
        }
    }
}

fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl fmt::Debug for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Currency({})", self.code())
    }
}

impl Serialize for Currency {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

impl<'de> Deserialize<'de> for Currency {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Currency::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Why a typed amount was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MajorAmountError {
    #[error("is not an amount (digits, optionally with a decimal point)")]
    NotANumber,
    #[error("has more than {0} decimals for this currency")]
    TooManyDecimals(u8),
    #[error("is too large")]
    TooLarge,
}

/// An amount in minor units: always at least 1.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize)]
#[serde(transparent)]
pub struct AmountMinor(u64);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AmountError {
    #[error("must be greater than zero")]
    NotPositive,
    #[error("must not exceed the cap of {cap} minor units for {currency}")]
    AboveCap { cap: u64, currency: Currency },
}

impl AmountMinor {
    /// An amount for `currency`, refused when zero, negative or above `cap`.
    pub fn parse(value: i128, currency: Currency, cap: u64) -> Result<Self, AmountError> {
        if value <= 0 {
            return Err(AmountError::NotPositive);
        }
        if value > i128::from(cap) {
            return Err(AmountError::AboveCap { cap, currency });
        }
        Ok(AmountMinor(value as u64))
    }

    /// Rebuilds an amount read back from storage, where it was validated on entry.
    pub fn from_stored(value: u64) -> Option<Self> {
        (value > 0).then_some(AmountMinor(value))
    }

    pub fn get(&self) -> u64 {
        self.0
    }
}

/// The deployment's currencies: which are allowed and the hard cap of each.
#[derive(Clone, Debug)]
pub struct CurrencyRules {
    caps: BTreeMap<Currency, u64>,
}

impl CurrencyRules {
    pub fn new(caps: BTreeMap<Currency, u64>) -> Self {
        CurrencyRules { caps }
    }

    /// The default allowlist: USD, EUR, GBP at 1,000,000.00; JPY at 150,000,000;
    /// VND at 25,000,000,000 (each roughly one million US dollars).
    pub fn defaults() -> Self {
        let mut caps = BTreeMap::new();
        for (code, cap) in [
            ("USD", 100_000_000u64),
            ("EUR", 100_000_000),
            ("GBP", 100_000_000),
            ("JPY", 150_000_000),
            ("VND", 25_000_000_000),
        ] {
            caps.insert(Currency::parse(code).expect("default currencies are known"), cap);
        }
        CurrencyRules { caps }
    }

    pub fn cap(&self, currency: Currency) -> Option<u64> {
        self.caps.get(&currency).copied()
    }

    pub fn allowed(&self) -> impl Iterator<Item = Currency> + '_ {
        self.caps.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn usd() -> Currency {
        Currency::parse("USD").unwrap()
    }

    #[test]
    fn amounts_typed_in_major_units() {
        let usd = Currency::parse("USD").unwrap();
        let jpy = Currency::parse("jpy").unwrap();
        let kwd = Currency::parse("KWD").unwrap();
        assert_eq!(usd.parse_major("5,000.00"), Ok(500_000));
        assert_eq!(usd.parse_major(" 5000 "), Ok(500_000));
        assert_eq!(usd.parse_major("1 250.5"), Ok(125_050));
        assert_eq!(usd.parse_major("0.01"), Ok(1));
        assert_eq!(jpy.parse_major("125,000"), Ok(125_000));
        assert_eq!(kwd.parse_major("1.234"), Ok(1_234));
        assert_eq!(jpy.parse_major("1.5"), Err(MajorAmountError::TooManyDecimals(0)));
        assert_eq!(usd.parse_major("1.005"), Err(MajorAmountError::TooManyDecimals(2)));
        for bad in ["", "-5", "+5", "5.", ".5", "1e3", "12a", "1.2.3", "USD 5"] {
            assert_eq!(usd.parse_major(bad), Err(MajorAmountError::NotANumber), "{bad}");
        }
        assert_eq!(usd.parse_major("99999999999999999999"), Err(MajorAmountError::TooLarge));
        assert_eq!(usd.parse_major(&format!("{}", i64::MAX)), Err(MajorAmountError::TooLarge), "x100 overflows i64");
    }

    #[test]
    fn currency_is_case_insensitive_and_canonical_upper() {
        assert_eq!(Currency::parse("usd").unwrap().code(), "USD");
        assert_eq!(Currency::parse("jPy").unwrap().code(), "JPY");
        assert!(Currency::parse("XXX").is_err());
        assert!(Currency::parse("US").is_err());
        assert!(Currency::parse("").is_err());
    }

    #[test]
    fn exponents_follow_iso_4217() {
        for (code, exp) in [("USD", 2), ("EUR", 2), ("GBP", 2), ("JPY", 0), ("VND", 0), ("KWD", 3)] {
            assert_eq!(Currency::parse(code).unwrap().exponent(), exp, "{code}");
        }
    }

    #[test]
    fn formats_by_exponent() {
        assert_eq!(usd().format_minor(25_000), "250.00 USD");
        assert_eq!(usd().format_minor(184_250), "1,842.50 USD");
        assert_eq!(usd().format_minor(5), "0.05 USD");
        assert_eq!(Currency::parse("JPY").unwrap().format_minor(125_000), "125,000 JPY");
        assert_eq!(Currency::parse("VND").unwrap().format_minor(1_000_000), "1,000,000 VND");
        assert_eq!(Currency::parse("KWD").unwrap().format_minor(1_005), "1.005 KWD");
    }

    #[test]
    fn amount_bounds() {
        assert_eq!(AmountMinor::parse(0, usd(), 100), Err(AmountError::NotPositive));
        assert_eq!(AmountMinor::parse(-1, usd(), 100), Err(AmountError::NotPositive));
        assert_eq!(AmountMinor::parse(101, usd(), 100), Err(AmountError::AboveCap { cap: 100, currency: usd() }));
        assert_eq!(AmountMinor::parse(100, usd(), 100).unwrap().get(), 100);
        assert_eq!(AmountMinor::parse(1, usd(), 100).unwrap().get(), 1);
    }

    proptest! {
        #[test]
        fn amounts_are_never_accepted_out_of_range(v in any::<i128>(), cap in 1u64..u64::MAX) {
            match AmountMinor::parse(v, usd(), cap) {
                Ok(a) => prop_assert!(a.get() >= 1 && a.get() <= cap && i128::from(a.get()) == v),
                Err(_) => prop_assert!(v <= 0 || v > i128::from(cap)),
            }
        }

        #[test]
        fn formatting_round_trips_the_digits(minor in 0u64..10_000_000_000_000) {
            let s = usd().format_minor(minor);
            let digits: String = s.chars().filter(|c| c.is_ascii_digit()).collect();
            let expected = minor.to_string();
            prop_assert_eq!(digits.trim_start_matches('0'), expected.trim_start_matches('0'));
        }
    }
}
