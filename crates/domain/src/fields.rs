//! The boundary values of a proposal, each a type that only holds valid data.
//!
//! Account identifiers mask themselves in `Display` and `Debug`
//! (`acct_…9f3a`), so a log line or an error message can never carry a full
//! account number by accident; the full value is reached only through
//! `expose()`, which stands out in review.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
#[error("{0}")]
pub struct FieldRule(pub &'static str);

fn all_chars(s: &str, ok: impl Fn(char) -> bool) -> bool {
    s.chars().all(ok)
}

fn alnum(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

/// `acct_…9f3a`: the prefix, an ellipsis and the last four characters.
pub fn mask_account(id: &str) -> String {
    let prefix_end = id.find('_').map(|i| i + 1).unwrap_or(0);
    let body = &id[prefix_end..];
    let tail: String = body.chars().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect();
    format!("{}…{}", &id[..prefix_end], tail)
}

/// `acct_…0001 #k3f9`: [`mask_account`] and a four-character tag of the
/// whole identifier (its SHA-256, Crockford base32), so two accounts that
/// end alike (`acct_acme…0001`, `acct_beta…0001`) look different to a
/// reviewer, while the full number still never reaches a screen.
pub fn mask_account_tagged(id: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(id.as_bytes());
    let tag: String = digest.iter().take(4).map(|b| crate::ids::crockford_char(*b)).collect();
    format!("{} #{tag}", mask_account(id))
}

macro_rules! account_type {
    ($(#[$doc:meta])* $name:ident, $check:expr, $rule:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn parse(s: &str) -> Result<Self, FieldRule> {
                let check: fn(&str) -> bool = $check;
                if check(s) { Ok($name(s.to_owned())) } else { Err(FieldRule($rule)) }
            }
            /// The full identifier. Never log it; `Display` masks.
            pub fn expose(&self) -> &str {
                &self.0
            }
            pub fn masked(&self) -> String {
                mask_account(&self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.masked())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.masked())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                $name::parse(&s).map_err(serde::de::Error::custom)
            }
        }
    };
}

/// [`SourceAccount`]'s form, as a JSON Schema (ECMA-262) pattern.
pub const SOURCE_ACCOUNT_PATTERN: &str = "^acct_[A-Za-z0-9]{16}$";
/// [`PayeeId`]'s form.
pub const PAYEE_ID_PATTERN: &str = "^(acct_|card_|ba_)[A-Za-z0-9]{1,64}$";
/// [`RunId`]'s form.
pub const RUN_ID_PATTERN: &str = "^[A-Za-z0-9_.:-]{1,128}$";
/// [`InvoiceId`]'s form.
pub const INVOICE_ID_PATTERN: &str = "^[A-Za-z0-9_-]{1,64}$";
/// [`TransferRef`]'s form.
pub const TRANSFER_REF_PATTERN: &str = "^(prop_|tr_)[A-Za-z0-9]{1,64}$";

account_type!(
    /// A source account: `^acct_[A-Za-z0-9]{16}$`.
    SourceAccount,
    |s| s.len() == 21 && s.starts_with("acct_") && all_chars(&s[5..], alnum),
    "must match ^acct_[A-Za-z0-9]{16}$"
);

account_type!(
    /// A payee / destination: `^(acct_|card_|ba_)[A-Za-z0-9]{1,64}$`.
    PayeeId,
    |s| {
        ["acct_", "card_", "ba_"].iter().any(|p| {
            s.strip_prefix(p)
                .is_some_and(|rest| (1..=64).contains(&rest.len()) && all_chars(rest, alnum))
        })
    },
    "must match ^(acct_|card_|ba_)[A-Za-z0-9]{1,64}$"
);

macro_rules! plain_id {
    ($(#[$doc:meta])* $name:ident, $check:expr, $rule:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn parse(s: &str) -> Result<Self, $crate::fields::FieldRule> {
                let check: fn(&str) -> bool = $check;
                if check(s) { Ok($name(s.to_owned())) } else { Err($crate::fields::FieldRule($rule)) }
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <String as serde::Deserialize>::deserialize(d)?;
                $name::parse(&s).map_err(serde::de::Error::custom)
            }
        }
    };
}
/// A text value type: `parse` (the only way in), `as_str`, `into_string`,
/// `Display`, and serde both ways (deserializing parses). Shared by the
/// registry's values (`crate::registry`).
pub(crate) use plain_id;

plain_id!(
    /// The agent run a proposal belongs to: 1–128 of `[A-Za-z0-9_.:-]`.
    RunId,
    |s| (1..=128).contains(&s.len()) && all_chars(s, |c| alnum(c) || "_.:-".contains(c)),
    "must be 1-128 characters of [A-Za-z0-9_.:-]"
);

plain_id!(
    /// An invoice number: `^[A-Za-z0-9_-]{1,64}$`.
    InvoiceId,
    |s| (1..=64).contains(&s.len()) && all_chars(s, |c| alnum(c) || c == '_' || c == '-'),
    "must match ^[A-Za-z0-9_-]{1,64}$"
);

plain_id!(
    /// The transfer a reversal names: a proposal id (`prop_…`) or a rail
    /// transfer reference (`tr_…`).
    TransferRef,
    |s| {
        ["prop_", "tr_"].iter().any(|p| {
            s.strip_prefix(p)
                .is_some_and(|rest| (1..=64).contains(&rest.len()) && all_chars(rest, alnum))
        })
    },
    "must be a proposal id (prop_…) or a rail transfer id (tr_…)"
);

/// Free text from the agent, shown to humans as untrusted data: at most 140
/// characters, no control characters and no bidirectional-override or
/// zero-width formatting characters (they can make text read differently
/// from what it is).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize)]
#[serde(transparent)]
pub struct Reference(String);

/// Zero-width and bidirectional formatting characters: they make text read
/// differently from what it is, so no text shown to a person may hold them.
pub fn is_deceptive_format_char(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// [`is_deceptive_format_char`] and control characters, as a JSON Schema
/// (ECMA-262) pattern a whole string must match to hold none of them.
pub const NO_CONTROL_OR_DECEPTIVE_PATTERN: &str =
    "^[^\\u0000-\\u001F\\u007F-\\u009F\\u200B-\\u200F\\u202A-\\u202E\\u2066-\\u2069\\uFEFF]*$";

/// Whether a person could be misled by `c` in text: a control character or
/// [`is_deceptive_format_char`].
pub fn is_unsafe_in_text(c: char) -> bool {
    c.is_control() || is_deceptive_format_char(c)
}

impl Reference {
    pub const MAX_CHARS: usize = 140;

    pub fn parse(s: &str) -> Result<Self, FieldRule> {
        if s.chars().count() > Self::MAX_CHARS {
            return Err(FieldRule("must be at most 140 characters"));
        }
        if s.chars().any(is_unsafe_in_text) {
            return Err(FieldRule("must not contain control or bidirectional formatting characters"));
        }
        Ok(Reference(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Reference {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Reference::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// A closed set of names: `parse`, `as_str` and `ALL` come from strum's
/// derives, the names being the variants' in snake case for strum as for
/// serde (the tests pin every one).
macro_rules! closed_set {
    ($(#[$doc:meta])* $name:ident { $($variant:ident),+ $(,)? }, $rule:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
        #[derive(strum::EnumString, strum::IntoStaticStr, strum::VariantArray)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(rename_all = "snake_case")]
        #[strum(serialize_all = "snake_case")]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = <$name as strum::VariantArray>::VARIANTS;

            pub fn parse(s: &str) -> Result<Self, FieldRule> {
                s.parse().map_err(|_| FieldRule($rule))
            }

            pub fn as_str(&self) -> &'static str {
                self.into()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

closed_set!(
    /// Why money moves.
    PurposeCode { Payroll, Refund, Vendor, Disbursement },
    "must be one of payroll, refund, vendor, disbursement"
);

closed_set!(
    /// What a proposal asks for.
    ProposalKind { Transfer, Reversal },
    "must be transfer or reversal"
);

closed_set!(
    /// Why a transfer is reversed.
    ReasonCode { Duplicate, Fraudulent, RequestedByCustomer, Error },
    "must be one of duplicate, fraudulent, requested_by_customer, error"
);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn source_accounts() {
        assert!(SourceAccount::parse("acct_0123456789abcdef").is_ok());
        assert!(SourceAccount::parse("acct_0123456789abcde").is_err());
        assert!(SourceAccount::parse("acct_0123456789abcdefg").is_err());
        assert!(SourceAccount::parse("acct_0123456789abcd-f").is_err());
        assert!(SourceAccount::parse("card_0123456789abcdef").is_err());
        assert!(SourceAccount::parse("acct_0123456789abcdé").is_err());
    }

    #[test]
    fn tagged_masks_tell_accounts_that_end_alike_apart() {
        let (a, b) = (mask_account_tagged("acct_acme0000000001"), mask_account_tagged("acct_beta0000000001"));
        assert!(a.starts_with("acct_…0001 #") && b.starts_with("acct_…0001 #"), "{a} {b}");
        assert_ne!(a, b);
        assert_eq!(a, mask_account_tagged("acct_acme0000000001"), "stable");
        assert_eq!(a.len(), "acct_…0001 #".len() + 4);
        assert!(!a.contains("acme"));
    }

    #[test]
    fn payee_ids() {
        for ok in ["acct_a", "card_Z9", "ba_123", &format!("acct_{}", "a".repeat(64))] {
            assert!(PayeeId::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["acct_", "ba_", "iban_1", "acct_a-b", &format!("acct_{}", "a".repeat(65)), "ACCT_a"] {
            assert!(PayeeId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn accounts_mask_in_display_and_debug() {
        let a = SourceAccount::parse("acct_0123456789ab9f3a").unwrap();
        assert_eq!(a.to_string(), "acct_…9f3a");
        assert_eq!(format!("{a:?}"), "SourceAccount(acct_…9f3a)");
        assert_eq!(PayeeId::parse("ba_12").unwrap().to_string(), "ba_…12");
        assert!(!format!("{a:?}").contains("0123456789"));
    }

    #[test]
    fn run_and_invoice_ids() {
        assert!(RunId::parse("run-42:step.3_a").is_ok());
        assert!(RunId::parse("").is_err());
        assert!(RunId::parse(&"r".repeat(129)).is_err());
        assert!(RunId::parse("run 42").is_err());
        assert!(InvoiceId::parse("INV-1842_a").is_ok());
        assert!(InvoiceId::parse("INV.1842").is_err());
        assert!(InvoiceId::parse(&"1".repeat(65)).is_err());
    }

    #[test]
    fn references() {
        assert!(Reference::parse("Invoice 1842 — thank you").is_ok());
        assert!(Reference::parse(&"é".repeat(140)).is_ok());
        assert!(Reference::parse(&"é".repeat(141)).is_err());
        assert!(Reference::parse("line\nbreak").is_err());
        assert!(Reference::parse("tab\there").is_err());
        assert!(Reference::parse("bidi \u{202E}txt").is_err());
        assert!(Reference::parse("zero\u{200B}width").is_err());
    }

    #[test]
    fn closed_sets() {
        assert_eq!(PurposeCode::parse("vendor").unwrap(), PurposeCode::Vendor);
        assert!(PurposeCode::parse("Vendor").is_err());
        assert_eq!(ReasonCode::parse("requested_by_customer").unwrap().as_str(), "requested_by_customer");
        assert!(ProposalKind::parse("refund").is_err());
    }

    /// Every closed set's names, in `ALL`'s order (each variant once), as
    /// `as_str`, `parse`, serde and the refusal's list all spell them.
    #[test]
    fn every_closed_set_name_round_trips() {
        fn check<T>(
            all: &[T],
            names: &[&str],
            rule: &'static str,
            as_str: fn(&T) -> &'static str,
            parse: fn(&str) -> Result<T, FieldRule>,
        ) where
            T: Serialize + PartialEq + fmt::Debug,
        {
            assert_eq!(all.iter().map(as_str).collect::<Vec<_>>(), names);
            for (value, name) in all.iter().zip(names) {
                assert_eq!(parse(name).as_ref(), Ok(value));
                assert_eq!(serde_json::to_value(value).unwrap(), serde_json::json!(name));
                assert!(rule.contains(name), "{rule} names {name}");
            }
            assert_eq!(parse("nope"), Err(FieldRule(rule)));
        }
        check(
            PurposeCode::ALL,
            &["payroll", "refund", "vendor", "disbursement"],
            "must be one of payroll, refund, vendor, disbursement",
            PurposeCode::as_str,
            PurposeCode::parse,
        );
        check(
            ProposalKind::ALL,
            &["transfer", "reversal"],
            "must be transfer or reversal",
            ProposalKind::as_str,
            ProposalKind::parse,
        );
        check(
            ReasonCode::ALL,
            &["duplicate", "fraudulent", "requested_by_customer", "error"],
            "must be one of duplicate, fraudulent, requested_by_customer, error",
            ReasonCode::as_str,
            ReasonCode::parse,
        );
    }

    /// A documented pattern without its anchors, as a generator of strings.
    fn matching(pattern: &str) -> proptest::string::RegexGeneratorStrategy<String> {
        let body = pattern.strip_prefix('^').and_then(|p| p.strip_suffix('$')).expect("anchored pattern");
        proptest::string::string_regex(body).expect("a pattern proptest can generate from")
    }

    #[test]
    fn refusals_quote_the_documented_patterns() {
        for (pattern, refusal) in [
            (SOURCE_ACCOUNT_PATTERN, SourceAccount::parse("x").unwrap_err()),
            (PAYEE_ID_PATTERN, PayeeId::parse("x").unwrap_err()),
            (INVOICE_ID_PATTERN, InvoiceId::parse("").unwrap_err()),
        ] {
            assert!(refusal.0.contains(pattern), "{refusal} quotes {pattern}");
        }
    }

    proptest! {
        // What the OpenAPI document says each field matches, the parser accepts.
        #[test]
        fn documented_patterns_parse(
            source in matching(SOURCE_ACCOUNT_PATTERN),
            payee in matching(PAYEE_ID_PATTERN),
            run in matching(RUN_ID_PATTERN),
            invoice in matching(INVOICE_ID_PATTERN),
            transfer in matching(TRANSFER_REF_PATTERN),
        ) {
            prop_assert!(SourceAccount::parse(&source).is_ok(), "{}", source);
            prop_assert!(PayeeId::parse(&payee).is_ok(), "{}", payee);
            prop_assert!(RunId::parse(&run).is_ok(), "{}", run);
            prop_assert!(InvoiceId::parse(&invoice).is_ok(), "{}", invoice);
            prop_assert!(TransferRef::parse(&transfer).is_ok(), "{}", transfer);
        }

        #[test]
        fn reference_never_holds_control_chars_or_too_many(s in "\\PC*|.*") {
            if let Ok(r) = Reference::parse(&s) {
                prop_assert!(r.as_str().chars().count() <= 140);
                prop_assert!(!r.as_str().chars().any(char::is_control));
            }
        }

        #[test]
        fn masked_account_never_shows_more_than_four_body_chars(body in "[A-Za-z0-9]{16}") {
            let a = SourceAccount::parse(&format!("acct_{body}")).unwrap();
            let shown = a.to_string();
            prop_assert!(shown.ends_with(&body[12..]));
            prop_assert!(!shown.contains(&body[..12]));
        }

        #[test]
        fn run_id_accepts_exactly_its_pattern(s in "[A-Za-z0-9_.:-]{1,128}") {
            prop_assert!(RunId::parse(&s).is_ok());
        }
    }
}
