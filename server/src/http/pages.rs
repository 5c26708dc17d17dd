//! Standalone pages the server answers with itself, outside the console's
//! app: a secret shown once, and the step after a single sign-on. They are
//! Leptos views rendered to a string (Leptos escapes every value), carry no
//! script, and are sent with a strict Content-Security-Policy.

use axum::http::{header, HeaderValue};
use axum::response::{Html, IntoResponse, Response};
use leptos::prelude::*;

/// No script, no frames, no base; styles from the console's own sheet.
const CSP: &str = "default-src 'none'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// A whole document: `refresh_to`, if any, is where the browser goes next
/// by itself; `body` goes into the page's one card.
fn document(title: &str, refresh_to: Option<&str>, body: impl IntoView) -> Response {
    let refresh = refresh_to.map(|next| {
        let content = format!("0;url={next}");
        view! { <meta http-equiv="refresh" content=content /> }
    });
    // A `<title>` holds text only: its value is set escaped, as the inner
    // HTML, so that no hydration marker lands inside it.
    let title = html_escape::encode_text(&format!("{title} · Countersign")).into_owned();
    let html = view! {
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                {refresh}
                <title inner_html=title></title>
                <link rel="stylesheet" href="/pkg/countersign.css" />
            </head>
            <body>
                <main class="page">
                    <section class="card narrow">{body}</section>
                </main>
            </body>
        </html>
    }
    .to_html();
    let mut response = Html(format!("<!DOCTYPE html>{html}")).into_response();
    response.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    response
}

/// A page of its own with `body` in its card (the people pages: a user's,
/// one's own sessions), never cached.
pub fn page(title: &str, body: impl IntoView) -> Response {
    let mut response = document(title, None, body);
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A page showing a secret once (an agent's key, an enrolment code). Never
/// cached: the secret is in this answer and nowhere else.
pub fn one_time_secret(title: &str, explanation: &str, secret: &str, message: &str) -> Response {
    let heading = title.to_owned();
    let body = view! {
        <h1>{heading}</h1>
        <p>{explanation.to_owned()}</p>
        <code class="secret" id="one-time-secret">{secret.to_owned()}</code>
        <p class="notice" role="status">{message.to_owned()}</p>
        <p><a href="/admin">"Back to administration"</a></p>
    };
    let mut response = document(title, None, body);
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// After a successful sign-in: a page that moves on to `next` (a path on
/// this site) by itself, a navigation started here so that the `Strict`
/// session cookie goes with it, with a link for a browser that does not.
pub fn onwards(next: &str) -> Response {
    let body = view! {
        <h1>"Signed in"</h1>
        <p><a id="continue" href=next.to_owned()>"Continue to Countersign"</a></p>
    };
    document("Signed in", Some(next), body)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn text(response: Response) -> String {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn values_are_escaped_and_the_secret_is_never_cached() {
        let response = one_time_secret("Agent <b>", "x & y", "cs_live_\"k'", "<script>alert(1)</script>");
        assert_eq!(response.headers()[header::CACHE_CONTROL], "no-store");
        assert!(response.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .starts_with("default-src 'none'"));
        let html = text(response).await;
        assert!(html.starts_with("<!DOCTYPE html><html lang=\"en\">"), "{html}");
        assert!(!html.contains("<script") && !html.contains("<b>"), "{html}");
        assert!(html.contains("&lt;script&gt;") && html.contains("x &amp; y"), "{html}");
        assert!(html.contains("<title>Agent &lt;b&gt; · Countersign</title>"), "{html}");
        assert!(html.contains("id=\"one-time-secret\" class=\"secret\">cs_live_\"k'"), "{html}");
    }

    #[tokio::test]
    async fn onwards_refreshes_to_the_next_path_with_its_quotes_escaped() {
        let html = text(onwards("/proposals/p_1?x=\"><script>")).await;
        assert!(
            html.contains("<meta http-equiv=\"refresh\" content=\"0;url=/proposals/p_1?x=&quot;&gt;&lt;script&gt;\""),
            "{html}"
        );
        assert!(html.contains("id=\"continue\" href=\"/proposals/p_1?x=&quot;&gt;&lt;script&gt;\""), "{html}");
        assert!(!html.contains("<script"), "{html}");
    }
}
