use countersign_domain::{ReturnPath, Username};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::views::SignInOptions;

/// What the page says for each `error` code of a refused sign-in.
fn error_message(code: &str) -> &'static str {
    match code {
        "throttled" => "Too many failed sign-ins. Wait a few minutes and try again.",
        "sso_only" => "Your organisation signs in with single sign-on: use the button below.",
        "sso_expired" => "That single sign-on was already used or took too long. Start again.",
        "sso_not_linked" => {
            "Your account at the identity provider is not linked to a Countersign user. Ask an admin to link it."
        }
        "sso_denied" => "The identity provider did not grant you access to Countersign. Ask an admin.",
        "sso_cancelled" => "Single sign-on was cancelled at the identity provider.",
        "sso_unavailable" => "Single sign-on is not available right now. Try again later, or ask an admin.",
        "sso_failed" => "Single sign-on failed. Start again.",
        _ => "Wrong username or password.",
    }
}

/// Sign-in: a plain form, so it works before (and without) hydration. After
/// a failure the username comes back filled in (never the password) and the
/// password field has the focus; `next`, when it is a path on this origin,
/// rides along so sign-in lands on the page asked for. Each configured
/// single sign-on provider adds a "Sign in with …" link (the server's list,
/// shared with the browser for hydration).
#[component]
pub fn LoginPage() -> impl IntoView {
    let query = use_query_map();
    let options =
        SharedValue::<_, crate::codec::Mini>::new_with_encoding(|| use_context::<SignInOptions>().unwrap_or_default())
            .into_inner();
    let error = move || query.with(|q| q.get("error").map(|code| error_message(&code)));
    // Sent here by a form posted after the session ended.
    let expired = query.with_untracked(|q| q.get("expired").is_some());
    let (username, next) = query.with_untracked(|q| {
        let username = q
            .get("username")
            // Only what could be a username (128 characters of `[A-Za-z0-9_.@+-]`).
            .filter(|u| q.get("error").is_some() && Username::parse(u).is_ok());
        let next = q.get("next").and_then(|n| ReturnPath::parse(&n));
        (username, next)
    });
    let focus_password = username.is_some();
    let sso_next = next.as_ref().map(|n| format!("&next={}", n.query_value())).unwrap_or_default();
    let next = next.map(|p| p.as_str().to_owned());
    let next_for_passkey = next.clone().unwrap_or_else(|| "/".to_owned());
    let sso = (!options.providers.is_empty()).then(|| {
        let links = options
            .providers
            .into_iter()
            .map(|p| {
                let href = format!("/auth/oidc/start?provider={}{sso_next}", p.id);
                let label = format!("Sign in with {}", p.name);
                // `rel="external"`: a server route, not a page of the
                // console's router (which would show "page not found").
                view! { <a class="button sso" href=href rel="external" data-provider=p.id>{label}</a> }
            })
            .collect_view();
        view! {
            <div class="stack sso-options">
                <p class="muted">"Or"</p>
                {links}
            </div>
        }
    });
    view! {
        <Title text="Sign in"/>
        <section class="card narrow">
            <h1>"Sign in"</h1>
            {expired.then(|| view! {
                <p class="notice" role="status" id="session-expired">
                    "Your session had ended, so nothing was done. Sign in to go back to the page: what you typed \
                     there is kept."
                </p>
            })}
            {move || error().map(|e| view! { <p class="notice notice-error" role="alert">{e}</p> })}
            <form method="post" action="/login" class="stack">
                {next.map(|next| view! { <input type="hidden" name="next" value=next/> })}
                <label>"Username" <input name="username" autocomplete="username" required maxlength="128"
                    value=username autofocus=!focus_password/></label>
                <label>"Password" <input name="password" type="password" autocomplete="current-password" required
                    autofocus=focus_password/></label>
                <button type="submit" class="primary">"Sign in"</button>
            </form>
            // Shown by /passkeys.js where the browser can use passkeys.
            <div class="stack passkey-sign-in" id="passkey-sign-in-box" hidden>
                <p class="muted">"Or"</p>
                <button type="button" class="button" id="passkey-sign-in" data-next=next_for_passkey>
                    "Sign in with a passkey"
                </button>
                <p class="muted small" id="passkey-sign-in-status" role="status"></p>
            </div>
            {sso}
        </section>
    }
}
