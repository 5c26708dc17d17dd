//! SCIM filters (RFC 7644 §3.4.2.2) and attribute paths (§3.5.2): parsed
//! into a tree, evaluated against a resource as JSON. The grammar:
//!
//! ```text
//! filter  = or
//! or      = and *("or" and)
//! and     = not *("and" not)
//! not     = "not" "(" filter ")" / atom
//! atom    = "(" filter ")" / path "pr" / path op value / attr "[" filter "]" ["." sub]
//! op      = eq / ne / co / sw / ew / gt / lt / ge / le      (any case)
//! value   = "string" / number / true / false / null
//! path    = [schema-urn ":"] attr ["." sub]
//! ```
//!
//! Attribute names are compared without case, as SCIM says. A filter that
//! does not parse, or names an attribute the resource does not have, is
//! `invalidFilter` (the caller decides which attributes exist).

use serde_json::Value;

/// An attribute path: `name.givenName`, `emails` (the schema URN prefix of
/// the core schemas is dropped when parsed).
#[derive(Debug, Clone, PartialEq)]
pub struct AttrPath {
    pub attr: String,
    pub sub: Option<String>,
}

impl AttrPath {
    /// `attr` or `attr.sub`, lower case, for lookups in the schema's list.
    pub fn key(&self) -> String {
        match &self.sub {
            Some(sub) => format!("{}.{}", self.attr.to_ascii_lowercase(), sub.to_ascii_lowercase()),
            None => self.attr.to_ascii_lowercase(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Co,
    Sw,
    Ew,
    Gt,
    Lt,
    Ge,
    Le,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    Or(Box<Filter>, Box<Filter>),
    And(Box<Filter>, Box<Filter>),
    Not(Box<Filter>),
    Present(AttrPath),
    Compare(AttrPath, Op, Value),
    /// `emails[type eq "work"]`: some value of a multi-valued attribute
    /// matches the inner filter (whose paths are its sub-attributes).
    Where(String, Box<Filter>),
}

/// The target of a PATCH operation: `path = attrPath / valuePath ["." sub]`.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchPath {
    pub attr: String,
    pub filter: Option<Filter>,
    pub sub: Option<String>,
}

/// The schema URNs whose attributes are the resource's own.
const CORE_PREFIXES: [&str; 2] =
    ["urn:ietf:params:scim:schemas:core:2.0:user:", "urn:ietf:params:scim:schemas:core:2.0:group:"];

/// Parses a filter; `Err` says why (for `invalidFilter`'s detail).
pub fn parse(text: &str) -> Result<Filter, String> {
    let mut p = Parser { tokens: tokenize(text)?, at: 0 };
    if p.tokens.is_empty() {
        return Err("the filter is empty".into());
    }
    let f = p.or()?;
    match p.peek() {
        None => Ok(f),
        Some(t) => Err(format!("unexpected {} after the filter", t.describe())),
    }
}

/// Parses a PATCH path; `Err` says why (for `invalidPath`).
pub fn parse_path(text: &str) -> Result<PatchPath, String> {
    let mut p = Parser { tokens: tokenize(text)?, at: 0 };
    let Some(Token::Word(first)) = p.bump() else { return Err("a path starts with an attribute name".into()) };
    let path = attr_path(&first)?;
    let filter = if p.peek() == Some(&Token::Open('[')) {
        if path.sub.is_some() {
            return Err("a filter follows an attribute, not a sub-attribute".into());
        }
        p.bump();
        let f = p.or()?;
        p.expect(&Token::Close(']'))?;
        Some(f)
    } else {
        None
    };
    let sub = match (&filter, p.bump()) {
        (_, None) => path.sub,
        (Some(_), Some(Token::Word(w))) if w.len() > 1 && w.starts_with('.') && is_name(&w[1..]) => {
            Some(w[1..].to_owned())
        }
        (_, Some(t)) => return Err(format!("unexpected {} in the path", t.describe())),
    };
    if p.peek().is_some() {
        return Err("unexpected text after the path".into());
    }
    Ok(PatchPath { attr: path.attr, filter, sub })
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$')
}

/// `[urn:…:]attr[.sub]`.
fn attr_path(word: &str) -> Result<AttrPath, String> {
    let lower = word.to_ascii_lowercase();
    let rest = CORE_PREFIXES.iter().find(|p| lower.starts_with(**p)).map_or(word, |p| &word[p.len()..]);
    if rest.starts_with("urn:") {
        // Another schema's attribute (an extension): named as is, so the
        // caller can say it is not one of ours.
        return Ok(AttrPath { attr: rest.to_owned(), sub: None });
    }
    let (attr, sub) = match rest.split_once('.') {
        Some((a, s)) => (a, Some(s)),
        None => (rest, None),
    };
    if !is_name(attr) || sub.is_some_and(|s| !is_name(s)) {
        return Err(format!("`{word}` is not an attribute path"));
    }
    Ok(AttrPath { attr: attr.to_owned(), sub: sub.map(str::to_owned) })
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Str(String),
    Open(char),
    Close(char),
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Word(w) => format!("`{w}`"),
            Token::Str(_) => "a string".into(),
            Token::Open(c) | Token::Close(c) => format!("`{c}`"),
        }
    }
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '(' | '[' => {
                tokens.push(Token::Open(c));
                i += 1;
            }
            ')' | ']' => {
                tokens.push(Token::Close(c));
                i += 1;
            }
            '"' => {
                // A JSON string: read to its closing quote, escapes included.
                let start = i;
                i += 1;
                let mut escaped = false;
                loop {
                    let Some(&c) = chars.get(i) else { return Err("a string is not closed".into()) };
                    i += 1;
                    match (escaped, c) {
                        (true, _) => escaped = false,
                        (false, '\\') => escaped = true,
                        (false, '"') => break,
                        _ => {}
                    }
                }
                let literal: String = chars[start..i].iter().collect();
                let value: String = serde_json::from_str(&literal).map_err(|_| "a string is not valid".to_owned())?;
                tokens.push(Token::Str(value));
            }
            _ => {
                let start = i;
                while i < chars.len() && !chars[i].is_whitespace() && !"()[]\"".contains(chars[i]) {
                    i += 1;
                }
                tokens.push(Token::Word(chars[start..i].iter().collect()));
            }
        }
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn bump(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn expect(&mut self, want: &Token) -> Result<(), String> {
        match self.bump() {
            Some(t) if &t == want => Ok(()),
            Some(t) => Err(format!("expected {} but found {}", want.describe(), t.describe())),
            None => Err(format!("expected {} at the end", want.describe())),
        }
    }

    fn keyword(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(w)) if w.eq_ignore_ascii_case(word))
    }

    fn or(&mut self) -> Result<Filter, String> {
        let mut left = self.and()?;
        while self.keyword("or") {
            self.bump();
            left = Filter::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Filter, String> {
        let mut left = self.not()?;
        while self.keyword("and") {
            self.bump();
            left = Filter::And(Box::new(left), Box::new(self.not()?));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Filter, String> {
        if self.keyword("not") {
            self.bump();
            self.expect(&Token::Open('('))?;
            let inner = self.or()?;
            self.expect(&Token::Close(')'))?;
            return Ok(Filter::Not(Box::new(inner)));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Filter, String> {
        match self.bump() {
            Some(Token::Open('(')) => {
                let inner = self.or()?;
                self.expect(&Token::Close(')'))?;
                Ok(inner)
            }
            Some(Token::Word(word)) => {
                let path = attr_path(&word)?;
                if self.peek() == Some(&Token::Open('[')) {
                    if path.sub.is_some() {
                        return Err("a filter follows an attribute, not a sub-attribute".into());
                    }
                    self.bump();
                    let inner = self.or()?;
                    self.expect(&Token::Close(']'))?;
                    return Ok(Filter::Where(path.attr, Box::new(inner)));
                }
                let op = match self.bump() {
                    Some(Token::Word(op)) => op.to_ascii_lowercase(),
                    Some(t) => return Err(format!("expected an operator after `{word}`, found {}", t.describe())),
                    None => return Err(format!("expected an operator after `{word}`")),
                };
                let op = match op.as_str() {
                    "pr" => return Ok(Filter::Present(path)),
                    "eq" => Op::Eq,
                    "ne" => Op::Ne,
                    "co" => Op::Co,
                    "sw" => Op::Sw,
                    "ew" => Op::Ew,
                    "gt" => Op::Gt,
                    "lt" => Op::Lt,
                    "ge" => Op::Ge,
                    "le" => Op::Le,
                    other => return Err(format!("`{other}` is not a filter operator")),
                };
                let value = match self.bump() {
                    Some(Token::Str(s)) => Value::String(s),
                    Some(Token::Word(w)) if w == "true" => Value::Bool(true),
                    Some(Token::Word(w)) if w == "false" => Value::Bool(false),
                    Some(Token::Word(w)) if w == "null" => Value::Null,
                    Some(Token::Word(w)) => match serde_json::from_str::<serde_json::Number>(&w) {
                        Ok(n) => Value::Number(n),
                        Err(_) => return Err(format!("`{w}` is not a value (strings are quoted)")),
                    },
                    Some(t) => return Err(format!("expected a value, found {}", t.describe())),
                    None => return Err("expected a value at the end".into()),
                };
                Ok(Filter::Compare(path, op, value))
            }
            Some(t) => Err(format!("unexpected {}", t.describe())),
            None => Err("the filter ends too early".into()),
        }
    }
}

impl Filter {
    /// Every attribute path the filter names, as `attr` or `attr.sub`
    /// (lower case), for checking them against the resource's schema.
    pub fn paths(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect(None, &mut out);
        out
    }

    fn collect(&self, parent: Option<&str>, out: &mut Vec<String>) {
        let name = |p: &AttrPath| match parent {
            Some(parent) => format!("{parent}.{}", p.attr.to_ascii_lowercase()),
            None => p.key(),
        };
        match self {
            Filter::Or(a, b) | Filter::And(a, b) => {
                a.collect(parent, out);
                b.collect(parent, out);
            }
            Filter::Not(a) => a.collect(parent, out),
            Filter::Present(p) | Filter::Compare(p, _, _) => out.push(name(p)),
            Filter::Where(attr, inner) => {
                let attr = attr.to_ascii_lowercase();
                out.push(attr.clone());
                inner.collect(Some(&attr), out);
            }
        }
    }

    /// Whether `resource` matches. `case_exact` says whether an attribute
    /// path (lower case, `attr.sub`) compares strings with case.
    pub fn matches(&self, resource: &Value, case_exact: &dyn Fn(&str) -> bool) -> bool {
        match self {
            Filter::Or(a, b) => a.matches(resource, case_exact) || b.matches(resource, case_exact),
            Filter::And(a, b) => a.matches(resource, case_exact) && b.matches(resource, case_exact),
            Filter::Not(a) => !a.matches(resource, case_exact),
            Filter::Present(p) => values(resource, p).iter().any(|v| present(v)),
            Filter::Compare(p, op, want) => {
                let exact = case_exact(&p.key());
                values(resource, p).iter().any(|have| compare(have, *op, want, exact))
            }
            Filter::Where(attr, inner) => match get_ci(resource, attr) {
                Some(Value::Array(items)) => items.iter().any(|item| inner.matches(item, case_exact)),
                Some(item @ Value::Object(_)) => inner.matches(item, case_exact),
                _ => false,
            },
        }
    }
}

/// A member of `object` by name, without case.
pub fn get_ci<'a>(object: &'a Value, name: &str) -> Option<&'a Value> {
    object.as_object()?.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v)
}

/// The values a path names in `resource`: a multi-valued attribute gives
/// each value (a complex one's `value` sub-attribute when none is named).
fn values<'a>(resource: &'a Value, path: &AttrPath) -> Vec<&'a Value> {
    let Some(top) = get_ci(resource, &path.attr) else { return Vec::new() };
    let items: Vec<&Value> = match top {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    match &path.sub {
        Some(sub) => items.into_iter().filter_map(|item| get_ci(item, sub)).collect(),
        None => items
            .into_iter()
            .map(|item| if item.is_object() { get_ci(item, "value").unwrap_or(item) } else { item })
            .collect(),
    }
}

fn present(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    }
}

fn compare(have: &Value, op: Op, want: &Value, exact: bool) -> bool {
    match (have, want) {
        (Value::String(h), Value::String(w)) => {
            let (h, w) = if exact { (h.clone(), w.clone()) } else { (h.to_lowercase(), w.to_lowercase()) };
            match op {
                Op::Eq => h == w,
                Op::Ne => h != w,
                Op::Co => h.contains(&w),
                Op::Sw => h.starts_with(&w),
                Op::Ew => h.ends_with(&w),
                Op::Gt => h > w,
                Op::Lt => h < w,
                Op::Ge => h >= w,
                Op::Le => h <= w,
            }
        }
        (Value::Bool(h), Value::Bool(w)) => match op {
            Op::Eq => h == w,
            Op::Ne => h != w,
            _ => false,
        },
        (Value::Number(h), Value::Number(w)) => {
            let (h, w) = (h.as_f64().unwrap_or(f64::NAN), w.as_f64().unwrap_or(f64::NAN));
            match op {
                Op::Eq => h == w,
                Op::Ne => h != w,
                Op::Gt => h > w,
                Op::Lt => h < w,
                Op::Ge => h >= w,
                Op::Le => h <= w,
                _ => false,
            }
        }
        (_, Value::Null) => matches!(op, Op::Ne) && !have.is_null(),
        _ => matches!(op, Op::Ne),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ci(_: &str) -> bool {
        false
    }

    #[test]
    fn parses_what_identity_providers_send() {
        let okta = parse(r#"userName eq "ana@example.com""#).unwrap();
        assert_eq!(
            okta,
            Filter::Compare(AttrPath { attr: "userName".into(), sub: None }, Op::Eq, json!("ana@example.com"))
        );
        let entra = parse(r#"externalId eq "6f1c""#).unwrap();
        assert_eq!(entra.paths(), ["externalid"]);
        let nested = parse(r#"emails[type eq "work" and value co "@example.com"] or not (active eq false)"#).unwrap();
        assert_eq!(nested.paths(), ["emails", "emails.type", "emails.value", "active"]);
        let urn = parse(r#"urn:ietf:params:scim:schemas:core:2.0:User:userName sw "a""#).unwrap();
        assert_eq!(urn.paths(), ["username"]);
        assert_eq!(parse("meta.lastModified gt \"2020-01-01T00:00:00Z\"").unwrap().paths(), ["meta.lastmodified"]);
        assert!(matches!(parse("title pr").unwrap(), Filter::Present(_)));
    }

    #[test]
    fn refuses_what_does_not_parse_and_says_why() {
        for bad in [
            "",
            "userName",
            "userName eq",
            "userName eq ana",
            "userName xx \"a\"",
            "(userName eq \"a\"",
            "userName eq \"a\" and",
            "emails[type eq \"work\"",
            "userName eq \"a",
            "not userName eq \"a\"",
            "\"a\" eq userName",
            "user name eq \"a\"",
            "userName eq \"a\" )",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn matches_without_case_unless_exact() {
        let user = json!({"userName": "Ana@Example.com", "active": true, "externalId": "X1",
            "emails": [{"value": "ana@work.example", "type": "work"}, {"value": "ana@home.example", "type": "home"}],
            "name": {"givenName": "Ana"}});
        let exact = |p: &str| p == "externalid";
        let yes = |f: &str| parse(f).unwrap().matches(&user, &exact);
        assert!(yes(r#"userName eq "ana@example.com""#));
        assert!(!yes(r#"externalId eq "x1""#), "externalId is case-exact");
        assert!(yes(r#"externalId eq "X1""#));
        assert!(yes(r#"emails[type eq "work" and value ew "@work.example"]"#));
        assert!(!yes(r#"emails[type eq "home" and value ew "@work.example"]"#));
        assert!(yes(r#"emails co "home""#));
        assert!(yes(r#"name.givenName sw "an" and active eq true"#));
        assert!(yes(r#"not (active eq false)"#));
        assert!(!yes("title pr"));
        assert!(parse("userName eq \"x\"").unwrap().matches(&json!({"userName": "X"}), &ci));
    }

    #[test]
    fn patch_paths() {
        let p = parse_path(r#"emails[type eq "work"].value"#).unwrap();
        assert_eq!((p.attr.as_str(), p.sub.as_deref()), ("emails", Some("value")));
        assert!(p.filter.is_some());
        let p = parse_path("name.givenName").unwrap();
        assert_eq!((p.attr.as_str(), p.sub.as_deref(), p.filter), ("name", Some("givenName"), None));
        let p = parse_path(r#"members[value eq "usr_1"]"#).unwrap();
        assert_eq!((p.attr.as_str(), p.sub), ("members", None));
        let p = parse_path("urn:ietf:params:scim:schemas:core:2.0:User:active").unwrap();
        assert_eq!(p.attr, "active");
        for bad in
            ["", "emails[", "emails[type eq \"work\"]x", "a b", "name.given.name", "emails[type eq \"work\"].value.x"]
        {
            assert!(parse_path(bad).is_err(), "{bad:?}");
        }
    }
}
