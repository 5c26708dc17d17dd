//! Small pieces the pages share.

use countersign_domain::{OpStatus, ProposalStatus};
use leptos::prelude::*;

mod decided;
mod reach;
pub use decided::{done_message, DecidedNotice};
pub use reach::{ReachCard, ReachNote};

/// A status as a coloured badge, in words: a proposal's status, or an
/// operation's (the codes both have share one label, tested in the domain).
#[component]
pub fn StatusBadge(status: String) -> impl IntoView {
    let class = format!("badge badge-{status}");
    let label = ProposalStatus::parse(&status)
        .map(|s| s.label())
        .or_else(|| OpStatus::parse(&status).map(|s| s.label()))
        .unwrap_or("Unknown status");
    view! { <span class=class data-status=status>{label}</span> }
}

/// The hidden fields every form carries: the CSRF token, and the page it
/// was posted from (`return_to`: where a post from an ended session comes
/// back to after sign-in, and a stale form to, its draft put back by
/// `/session.js`), without the notices of an earlier post.
#[component]
pub fn CsrfField(token: String) -> impl IntoView {
    let location = leptos_router::hooks::use_location();
    let here = location.pathname.get_untracked();
    let search = location.search.get_untracked();
    let kept: Vec<&str> = search
        .trim_start_matches('?')
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter(|pair| {
            let key = pair.split('=').next().unwrap_or_default();
            !["error", "done", "decided", "result", "outcome", "expired"].contains(&key)
        })
        .collect();
    let return_to = if kept.is_empty() { here } else { format!("{here}?{}", kept.join("&")) };
    view! {
        <input type="hidden" name="csrf_token" value=token/>
        <input type="hidden" name="return_to" value=return_to/>
    }
}

/// A fixed message for a failed page load.
#[component]
pub fn LoadError(error: crate::views::ConsoleError) -> impl IntoView {
    let sign_in = matches!(error, crate::views::ConsoleError::SignInRequired);
    // Back here after signing in (a session that ended while the page was open).
    let location = leptos_router::hooks::use_location();
    let here = move || {
        let (path, search) = (location.pathname.get(), location.search.get());
        let sep = if search.is_empty() { "" } else { "?" };
        countersign_domain::login_href(&format!("{path}{sep}{search}"))
    };
    if sign_in {
        // A page opened in the console after the session ended (signed out
        // everywhere, the account deactivated): straight to sign-in, and
        // back here after it, as a full page load is sent (`load_viewer`).
        let navigate = leptos_router::hooks::use_navigate();
        let target = here();
        Effect::new(move |_| navigate(&target, Default::default()));
    }
    view! {
        <div class="notice notice-error" role="alert">
            <p>{error.message()}</p>
            {sign_in.then(|| view! { <p><a href=here>"Sign in"</a></p> })}
        </div>
    }
}

/// A proposal's risk signals (`server/src/risk.rs`), or that there are none.
#[component]
pub fn SignalList(signals: Vec<crate::views::SignalLine>) -> impl IntoView {
    if signals.is_empty() {
        return view! { <p class="muted small" id="no-signals">"No risk signals."</p> }.into_any();
    }
    let items = signals
        .into_iter()
        .map(|s| {
            // The other proposals it names, as links (a duplicate's twin).
            let related = s
                .related
                .into_iter()
                .map(|r| {
                    let href = format!("/proposals/{}", r.id);
                    view! { " "<a class="related" href=href data-related=r.id>{format!("Open the other ({})", r.status)}</a> }
                })
                .collect_view();
            view! { <li data-signal=s.code><strong>{s.label}</strong>" — "{s.message}{related}</li> }
        })
        .collect_view();
    view! {
        <div class="signals" role="note" aria-label="Risk signals">
            <ul class="signal-list">{items}</ul>
        </div>
    }
    .into_any()
}

/// A stored UTC time (`2026-12-01T09:41:13.123Z`) in the reader's time zone
/// ("2026-12-01 10:41 UTC+1"), optionally with how long from now ("in 23 h").
/// The server renders UTC, relative to `now` (the time the data was read);
/// once hydrated, the browser's zone and clock take over. The exact instant
/// stays in `datetime` and the tooltip.
#[component]
pub fn When(
    at: String,
    /// The server's time when the page's data was read; with it, the
    /// relative form is shown.
    #[prop(optional)]
    now: Option<String>,
    /// Only how long from now ("in 23 h"), for tight spaces (the queue);
    /// the instant stays in the tooltip. Needs `now`.
    #[prop(optional)]
    brief: bool,
) -> impl IntoView {
    use countersign_domain::when;
    let secs = when::epoch_secs(&at);
    let relative = now.is_some();
    let fallback = at.clone();
    let render = move |offset_minutes: i64, now: Option<i64>| match secs {
        None => fallback.clone(),
        Some(s) => match now.filter(|_| relative) {
            Some(n) if brief => when::relative(s - n),
            Some(n) => format!("{} ({})", when::local(s, offset_minutes), when::relative(s - n)),
            None => when::local(s, offset_minutes),
        },
    };
    let text = RwSignal::new(render(0, now.as_deref().and_then(when::epoch_secs)));
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let Some(s) = secs {
            // getTimezoneOffset is minutes *behind* UTC, for that instant.
            let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(s as f64 * 1000.0));
            let offset = -(date.get_timezone_offset() as i64);
            let now = (js_sys::Date::now() / 1000.0) as i64;
            text.set(render(offset, Some(now)));
        }
    });
    view! { <time datetime=at.clone() title=at>{move || text.get()}</time> }
}
