//! Where the console may send a browser: the page a signed-out reviewer
//! asked for (`next` after sign-in), and the proposal a decision was about.
//! An open redirect in a payment console is a phishing tool, so only a
//! path on this origin passes, checked here once for the server and the
//! console alike.

/// The longest `next` path kept; anything longer is dropped, not cut.
pub const RETURN_PATH_MAX: usize = 512;

/// A same-origin path to return to after sign-in: one leading `/` and then
/// visible ASCII only. Refused: `//host` and `/\host` (browsers read both as
/// another host), any backslash, control characters (browsers strip tabs and
/// newlines, so `/\t/host` would become `//host`), spaces, non-ASCII,
/// absolute URLs, and more than [`RETURN_PATH_MAX`] bytes. The sign-in page
/// itself is no place to return to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReturnPath(String);

impl ReturnPath {
    pub fn parse(raw: &str) -> Option<ReturnPath> {
        let bytes = raw.as_bytes();
        let same_origin = bytes.first() == Some(&b'/') && !matches!(bytes.get(1), Some(b'/' | b'\\'));
        let visible = bytes.iter().all(|b| (0x21..=0x7e).contains(b) && *b != b'\\');
        let login = raw == "/login" || raw.starts_with("/login?") || raw.starts_with("/login#");
        (same_origin && visible && raw.len() <= RETURN_PATH_MAX && !login).then(|| ReturnPath(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The sign-in page that returns here: `/login?next=…` (`/login` for
    /// the queue, where sign-in goes anyway).
    pub fn login_href(&self) -> String {
        if self.0 == "/" {
            return "/login".to_owned();
        }
        format!("/login?next={}", self.query_value())
    }

    /// The path percent-encoded for a query string's value (`next=…`).
    pub fn query_value(&self) -> String {
        let mut value = String::with_capacity(self.0.len());
        for b in self.0.bytes() {
            if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
                value.push(char::from(b));
            } else {
                value.push_str(&format!("%{b:02X}"));
            }
        }
        value
    }
}

/// The sign-in page for someone who asked for `path_and_query`: returning
/// there when it is a [`ReturnPath`], to the queue otherwise.
pub fn login_href(path_and_query: &str) -> String {
    ReturnPath::parse(path_and_query).map_or_else(|| "/login".to_owned(), |p| p.login_href())
}

/// Whether `id` looks like a proposal id (`prop_` and lower-case
/// alphanumerics), so it may go into a link without further thought.
pub fn is_proposal_id(id: &str) -> bool {
    id.strip_prefix("prop_").is_some_and(|rest| {
        !rest.is_empty() && rest.len() <= 64 && rest.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn same_origin_paths_pass() {
        for ok in ["/", "/proposals/prop_01abc", "/?status=rejected&order=oldest", "/operations/op_1/resolve", "/a%2Fb"]
        {
            assert_eq!(ReturnPath::parse(ok).map(|p| p.as_str().to_owned()), Some(ok.to_owned()), "{ok}");
        }
    }

    #[test]
    fn everything_else_is_refused() {
        for bad in [
            "",
            "proposals/x",
            "//evil.example",
            "//evil.example/proposals/x",
            "/\\evil.example",
            "\\\\evil.example",
            "/proposals\\..\\x",
            "https://evil.example/",
            "http:/evil.example",
            "javascript:alert(1)",
            " /proposals/x",
            "/proposals/x y",
            "/\t/evil.example",
            "/\n/evil.example",
            "/\r\n/evil.example",
            "/proposals/\u{0}",
            "/proposals/\u{7f}",
            "/caf\u{e9}",
            "/login",
            "/login?next=/x",
        ] {
            assert_eq!(ReturnPath::parse(bad), None, "{bad:?}");
        }
        assert!(ReturnPath::parse(&format!("/{}", "a".repeat(RETURN_PATH_MAX - 1))).is_some());
        assert_eq!(ReturnPath::parse(&format!("/{}", "a".repeat(RETURN_PATH_MAX))), None);
    }

    #[test]
    fn the_sign_in_link_carries_the_path_encoded() {
        assert_eq!(login_href("/proposals/prop_01a"), "/login?next=/proposals/prop_01a");
        assert_eq!(login_href("/?status=all&order=oldest"), "/login?next=/%3Fstatus%3Dall%26order%3Doldest");
        assert_eq!(login_href("/"), "/login");
        assert_eq!(login_href("//evil.example"), "/login");
    }

    #[test]
    fn proposal_ids() {
        assert!(is_proposal_id("prop_01jd5x3k2p0000000000000000"));
        for bad in ["prop_", "op_01", "prop_AB", "prop_x/../y", "prop_x\"", "javascript:1"] {
            assert!(!is_proposal_id(bad), "{bad}");
        }
    }

    proptest! {
        /// Whatever passes stays on this origin: a path beginning with one
        /// slash, no backslash, nothing a browser would strip or rewrite.
        #[test]
        fn nothing_that_passes_leaves_the_origin(raw in "\\PC{0,40}|[/\\\\\t\n a-z.:]{0,12}") {
            if let Some(p) = ReturnPath::parse(&raw) {
                let s = p.as_str();
                prop_assert!(s.starts_with('/') && !s.starts_with("//"));
                prop_assert!(!s.contains('\\'));
                prop_assert!(s.bytes().all(|b| b.is_ascii_graphic()));
            }
        }
    }
}
