//! The file format (SPEC §14), where values come from, and parsing TOML
//! into the entry structs with errors named by line and key.

use super::*;

// ---------------------------------------------------------------------------
// The file format (SPEC §14)
// ---------------------------------------------------------------------------

/// Amounts per currency: `{ USD = 5_000_000 }`. A problem with the code is
/// reported at its amount's line (the key itself is not spanned, so that
/// `serde_path_to_error` can name it).
pub(super) type Amounts = BTreeMap<String, Spanned<u64>>;
pub(super) type TextList = Spanned<Vec<Spanned<String>>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ProvisionFile {
    #[serde(default)]
    pub(super) tenant: Vec<Spanned<TenantEntry>>,
    #[serde(default)]
    pub(super) user: Vec<Spanned<UserEntry>>,
    #[serde(default)]
    pub(super) agent: Vec<Spanned<AgentEntry>>,
    #[serde(default)]
    pub(super) payee: Vec<Spanned<PayeeEntry>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TenantEntry {
    pub(super) id: Spanned<String>,
    pub(super) name: Spanned<String>,
    pub(super) daily_budget_minor: Option<Spanned<Amounts>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UserEntry {
    pub(super) tenant: Spanned<String>,
    pub(super) username: Spanned<String>,
    /// Development only: hashed before it is stored.
    pub(super) password: Option<Spanned<SecretString>>,
    pub(super) password_hash: Option<Spanned<String>>,
    /// Never in a file: the console's "keep the current password".
    #[serde(skip)]
    pub(super) keep_password: bool,
    pub(super) roles: TextList,
    pub(super) approval_limit_minor: Option<Spanned<Amounts>>,
    pub(super) slack_user_id: Option<Spanned<String>>,
    /// Single sign-on: the issuer of one of `[oidc.providers]`, exactly.
    pub(super) oidc_issuer: Option<Spanned<String>>,
    /// ... and the user's subject (`sub`) there.
    pub(super) oidc_subject: Option<Spanned<String>>,
    /// Never in a file: the console's and the CLI's "keep the link".
    #[serde(skip)]
    pub(super) keep_oidc: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AgentEntry {
    pub(super) tenant: Spanned<String>,
    pub(super) id: Spanned<String>,
    pub(super) key_sha256: Option<Spanned<String>>,
    /// Development only: only its SHA-256 is stored.
    pub(super) key: Option<Spanned<SecretString>>,
    pub(super) acts_for: Spanned<String>,
    pub(super) source_accounts: TextList,
    pub(super) purposes: TextList,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PayeeEntry {
    pub(super) tenant: Spanned<String>,
    pub(super) id: Spanned<String>,
    pub(super) legal_name: Spanned<String>,
    pub(super) trusted: Option<Spanned<bool>>,
}

/// A command-line value: it has no place in a file.
pub(super) fn cli<T>(value: T) -> Spanned<T> {
    Spanned::new(0..0, value)
}

pub(super) fn cli_amounts(amounts: &BTreeMap<String, u64>) -> Spanned<Amounts> {
    cli(amounts.iter().map(|(code, n)| (code.clone(), cli(*n))).collect())
}

// ---------------------------------------------------------------------------
// Where values come from
// ---------------------------------------------------------------------------

/// The origin of the values being applied: a named file (whose text gives
/// line numbers) or the command line.
pub(super) struct Source<'a> {
    pub(super) name: Option<&'a str>,
    pub(super) text: &'a str,
    /// Who the audit entries name: `cli`, or the admin (`user:…`) on the console.
    pub(super) actor: &'a str,
}

impl<'a> Source<'a> {
    pub(super) fn file(name: &'a str, text: &'a str) -> Self {
        Source { name: Some(name), text, actor: "cli" }
    }

    pub(super) fn cli(actor: &'a str) -> Source<'a> {
        Source { name: None, text: "", actor }
    }

    pub(super) fn loc(&self, key: String, span: &Range<usize>) -> Loc {
        Loc { file: self.name.map(str::to_owned), line: self.name.map(|_| line_of(self.text, span.start)), key }
    }

    /// Where a referenced tenant or user was looked for.
    pub(super) fn defined_where(&self) -> &'static str {
        if self.name.is_some() {
            "in this file or the database"
        } else {
            "in the database"
        }
    }
}

/// The 1-based line holding byte `offset` of `text`.
pub(super) fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|b| **b == b'\n').count() + 1
}

/// `prefix.name`, or just `name` at the top level.
pub(super) fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

/// Where one value was written: what a [`Problem`] about it names.
#[derive(Debug, Clone)]
pub(super) struct Loc {
    pub(super) file: Option<String>,
    pub(super) line: Option<usize>,
    pub(super) key: String,
}

impl Loc {
    pub(super) fn problem(&self, message: impl Into<String>) -> Problem {
        Problem { file: self.file.clone(), line: self.line, key: Some(self.key.clone()), message: message.into() }
    }
}

/// A validated value with where it was written, for problems found later.
#[derive(Debug, Clone)]
pub(super) struct Located<T> {
    pub(super) value: T,
    pub(super) at: Loc,
}

// ---------------------------------------------------------------------------
// Parsing: TOML into the entry structs, errors named by line and key
// ---------------------------------------------------------------------------

pub(super) fn parse_file(source: &Source<'_>) -> Result<ProvisionFile, ApplyError> {
    serde_path_to_error::deserialize(toml::Deserializer::new(source.text))
        .map_err(|e| ApplyError::Invalid(vec![toml_problem(source, &e)]))
}

/// A TOML or schema error (syntax, unknown key, wrong type, missing key)
/// as a [`Problem`]: the error's span gives the line, `serde_path_to_error`
/// the key path (`agent[0].acts_for`).
pub(super) fn toml_problem(source: &Source<'_>, e: &serde_path_to_error::Error<toml::de::Error>) -> Problem {
    let inner = e.inner();
    let mut key = key_path(e.path());
    if let Some(field) = inner.message().strip_prefix("missing field `").and_then(|m| m.strip_suffix('`')) {
        key = Some(join(key.as_deref().unwrap_or(""), field));
    }
    Problem {
        file: source.name.map(str::to_owned),
        line: inner.span().map(|s| line_of(source.text, s.start)),
        key,
        message: inner.message().trim().replace('\n', "; "),
    }
}

/// The path as the file's author wrote it: `toml::Spanned`'s private
/// wrapper keys are left out, and an empty path (a syntax error) is none.
pub(super) fn key_path(path: &serde_path_to_error::Path) -> Option<String> {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } if !key.starts_with("$__") => {
                out = join(&out, key);
            }
            _ => {}
        }
    }
    Some(out).filter(|p| !p.is_empty())
}
