//! The payees' bank details for a bank-file rail: a TOML file the operator
//! keeps (`rails.NAME.beneficiaries`), the only place their full account
//! numbers live. Countersign's registry knows a payee by its id
//! (`ba_northwind0007`); this file says which account that id pays:
//!
//! ```toml
//! [[beneficiary]]
//! id = "ba_northwind0007"
//! name = "Northwind Traders Ltd"          # the creditor name the bank sees
//! iban = "FR1420041010050500013M02606"    # or: account = "123456789" (another scheme)
//! bic = "BNPAFRPP"                        # optional
//! ```
//!
//! A bad entry is refused with its position and key, never its value; an
//! account number never reaches a log, an error or the audit trail.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

use super::fields;

/// Where a beneficiary is paid.
#[derive(Clone, PartialEq, Eq)]
pub enum Account {
    Iban(String),
    /// Another scheme's account number (`Othr/Id`).
    Other(String),
}

impl Account {
    /// The last four characters, for people.
    pub fn masked(&self) -> String {
        let s = match self {
            Account::Iban(s) | Account::Other(s) => s,
        };
        let tail: String = s.chars().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect();
        format!("…{tail}")
    }
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Account({})", self.masked())
    }
}

/// One payee's bank details.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Beneficiary {
    pub id: String,
    pub name: String,
    pub account: Account,
    pub bic: Option<String>,
}

/// Every beneficiary of a rail, by payee id.
#[derive(Clone, Debug, Default)]
pub struct Directory {
    by_id: BTreeMap<String, Beneficiary>,
}

/// Why a beneficiaries file was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DirectoryError {
    #[error("cannot read the beneficiaries file {path}")]
    Read { path: String },
    #[error("the beneficiaries file is not valid TOML of [[beneficiary]] entries: {0}")]
    Syntax(String),
    #[error("beneficiary #{index}: key `{key}` {why}")]
    Entry { index: usize, key: &'static str, why: &'static str },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    beneficiary: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    id: String,
    name: String,
    iban: Option<String>,
    account: Option<String>,
    bic: Option<String>,
}

impl Directory {
    pub fn load(path: &Path) -> Result<Directory, DirectoryError> {
        let text =
            std::fs::read_to_string(path).map_err(|_| DirectoryError::Read { path: path.display().to_string() })?;
        Directory::parse(&text)
    }

    pub fn parse(text: &str) -> Result<Directory, DirectoryError> {
        // TOML's own message quotes the offending line, which may hold an
        // account number: only its position is kept.
        let file: File = toml::from_str(text).map_err(|e| {
            DirectoryError::Syntax(match e.span() {
                Some(span) => format!("at byte {}", span.start),
                None => "unreadable".into(),
            })
        })?;
        let mut by_id = BTreeMap::new();
        for (i, e) in file.beneficiary.into_iter().enumerate() {
            let index = i + 1;
            let bad = |key, why| DirectoryError::Entry { index, key, why };
            let id_ok = e.id.len() <= 68
                && ["acct_", "ba_", "card_"].iter().any(|p| e.id.strip_prefix(p).is_some_and(|r| !r.is_empty()))
                && e.id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !id_ok {
                return Err(bad("id", "must be a payee id of the registry (acct_…, ba_…, card_…)"));
            }
            if !fields::name_ok(&e.name) {
                return Err(bad("name", "must be 1 to 140 characters of the banks' character set"));
            }
            let account = match (e.iban, e.account) {
                (Some(iban), None) if fields::iban_ok(&iban) => Account::Iban(iban),
                (Some(_), None) => return Err(bad("iban", "is not a valid IBAN")),
                (None, Some(other)) if fields::other_account_ok(&other) => Account::Other(other),
                (None, Some(_)) => return Err(bad("account", "must be 1 to 34 letters, digits or -")),
                _ => return Err(bad("iban", "exactly one of `iban` and `account` is needed")),
            };
            if e.bic.as_deref().is_some_and(|b| !fields::bic_ok(b)) {
                return Err(bad("bic", "is not a BIC (8 or 11 characters)"));
            }
            if by_id.contains_key(&e.id) {
                return Err(bad("id", "is listed twice"));
            }
            by_id.insert(e.id.clone(), Beneficiary { id: e.id, name: e.name, account, bic: e.bic });
        }
        Ok(Directory { by_id })
    }

    pub fn get(&self, id: &str) -> Option<&Beneficiary> {
        self.by_id.get(id)
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_checked_and_errors_never_quote_an_account() {
        let ok = Directory::parse(
            r#"
            [[beneficiary]]
            id = "ba_northwind0007"
            name = "Northwind Traders Ltd"
            iban = "FR1420041010050500013M02606"
            bic = "BNPAFRPP"
            [[beneficiary]]
            id = "ba_us0001"
            name = "Contoso Inc"
            account = "000123456789"
            "#,
        )
        .unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(ok.get("ba_us0001").unwrap().account, Account::Other("000123456789".into()));
        assert_eq!(format!("{:?}", ok.get("ba_northwind0007").unwrap().account), "Account(…2606)");

        let entry = |body: &str| Directory::parse(&format!("[[beneficiary]]\n{body}")).unwrap_err();
        let e = entry("id = \"ba_1\"\nname = \"N\"\niban = \"FR1420041010050500013M02607\"");
        assert_eq!(e, DirectoryError::Entry { index: 1, key: "iban", why: "is not a valid IBAN" });
        assert!(!e.to_string().contains("FR14"));
        assert!(matches!(
            entry("id = \"x_1\"\nname = \"N\"\naccount = \"1\""),
            DirectoryError::Entry { key: "id", .. }
        ));
        assert!(matches!(entry("id = \"ba_1\"\nname = \"N\""), DirectoryError::Entry { key: "iban", .. }));
        assert!(matches!(
            entry("id = \"ba_1\"\nname = \"Nø\"\naccount = \"1\""),
            DirectoryError::Entry { key: "name", .. }
        ));
        let syntax =
            Directory::parse("[[beneficiary]]\nid = \"ba_1\"\niban = FR1420041010050500013M02606").unwrap_err();
        assert!(matches!(syntax, DirectoryError::Syntax(_)) && !syntax.to_string().contains("FR14"), "{syntax}");
    }
}
