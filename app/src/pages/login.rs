use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// Sign-in: a plain form, so it works before (and without) hydration.
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
    view! {
        <section class="card narrow">
            <h1>"Sign in"</h1>
            {move || error().map(|e| view! { <p class="notice notice-error" role="alert">{e}</p> })}
            <form method="post" action="/login" class="stack">
                <label>"Username" <input name="username" autocomplete="username" required/></label>
                <label>"Password" <input name="password" type="password" autocomplete="current-password" required/></label>
                <button type="submit" class="primary">"Sign in"</button>
            </form>
        </section>
    }
}
