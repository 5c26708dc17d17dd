use countersign_domain::{ReturnPath, Username};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// Sign-in: a plain form, so it works before (and without) hydration. After
/// a failure the username comes back filled in (never the password) and the
/// password field has the focus; `next`, when it is a path on this origin,
/// rides along so sign-in lands on the page asked for.
#[component]
pub fn LoginPage() -> impl IntoView {
    let query = use_query_map();
    let error = move || {
        query.with(|q| match q.get("error").as_deref() {
            Some("throttled") => Some("Too many failed sign-ins. Wait a few minutes and try again."),
            Some(_) => Some("Wrong username or password."),
            None => None,
        })
    };
    let (username, next) = query.with_untracked(|q| {
        let username = q
            .get("username")
            // Only what could be a username (64 characters of `[A-Za-z0-9_.-]`).
            .filter(|u| q.get("error").is_some() && Username::parse(u).is_ok());
        let next = q.get("next").and_then(|n| ReturnPath::parse(&n)).map(|p| p.as_str().to_owned());
        (username, next)
    });
    let focus_password = username.is_some();
    view! {
        <Title text="Sign in"/>
        <section class="card narrow">
            <h1>"Sign in"</h1>
            {move || error().map(|e| view! { <p class="notice notice-error" role="alert">{e}</p> })}
            <form method="post" action="/login" class="stack">
                {next.map(|next| view! { <input type="hidden" name="next" value=next/> })}
                <label>"Username" <input name="username" autocomplete="username" required maxlength="64"
                    value=username autofocus=!focus_password/></label>
                <label>"Password" <input name="password" type="password" autocomplete="current-password" required
                    autofocus=focus_password/></label>
                <button type="submit" class="primary">"Sign in"</button>
            </form>
        </section>
    }
}
