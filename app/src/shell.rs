use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    path, SsrMode,
};

use crate::api::load_waiting_count;
use crate::components::CsrfField;
use crate::pages::{admin::AdminPage, home::HomePage, operations::OperationsPage, proposal::ProposalPage};
// The server-only pages: the real ones on the server; in the browser, a
// link to one loads it from the server (`FullLoad`), so their code is not
// in the wasm.
#[cfg(feature = "ssr")]
use crate::pages::{
    account::AccountPage,
    approve::ApprovePage,
    batch::{BatchPage, BatchesPage},
    bulk::BulkDecisionPage,
    human_loop::HumanLoopPage,
    login::LoginPage,
    operations::ResolveOperationPage,
    policy::PolicyPage,
};
#[cfg(not(feature = "ssr"))]
use in_browser::*;
#[cfg(not(feature = "ssr"))]
mod in_browser {
    pub(super) use super::FullLoad as AccountPage;
    pub(super) use super::FullLoad as ApprovePage;
    pub(super) use super::FullLoad as BatchPage;
    pub(super) use super::FullLoad as BatchesPage;
    pub(super) use super::FullLoad as BulkDecisionPage;
    pub(super) use super::FullLoad as HumanLoopPage;
    pub(super) use super::FullLoad as LoginPage;
    pub(super) use super::FullLoad as PolicyPage;
    pub(super) use super::FullLoad as ResolveOperationPage;
}
use crate::views::Viewer;

/// The pages sent without the console's WebAssembly: nothing on them
/// changes after it is rendered (no live refresh, no preview as one
/// types), so links and form posts are all they need, and the wasm that
/// every page would otherwise carry is smaller by their code
/// (docs/DECISIONS.md, "Pages that change nothing in the browser are
/// server-only"). Route patterns of `App`; `:name` is one segment.
pub const SERVER_ONLY: [&str; 9] = [
    "/login",
    "/proposals/:id/approve",
    "/bulk",
    "/batches",
    "/batches/:id",
    "/operations/:id/resolve",
    "/account",
    "/admin/loop",
    "/admin/policy",
];

/// Whether the page at `path` is one of [`SERVER_ONLY`].
pub fn server_only(path: &str) -> bool {
    let path = path.strip_suffix('/').filter(|p| !p.is_empty()).unwrap_or(path);
    SERVER_ONLY.iter().any(|pattern| {
        let mut segments = path.split('/');
        pattern.split('/').all(|want| match segments.next() {
            Some(got) if want.starts_with(':') => !got.is_empty(),
            Some(got) => got == want,
            None => false,
        }) && segments.next().is_none()
    })
}

/// The script policy: only our own files and the hydration script carrying
/// this response's nonce; WebAssembly may compile, nothing may `eval`.
pub fn content_security_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; style-src 'self'; \
         img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; \
         form-action 'self'; frame-ancestors 'none'"
    )
}

/// The HTML document around the app, rendered on the server only.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let (Some(nonce), Some(response)) = (leptos::nonce::use_nonce(), use_context::<leptos_axum::ResponseOptions>()) {
        if let Ok(value) = http::HeaderValue::from_str(&content_security_policy(&nonce)) {
            response.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
        }
    }
    // A server-only page loads no wasm: nothing on it would hydrate.
    #[cfg(feature = "ssr")]
    let hydrate = use_context::<http::request::Parts>().is_none_or(|parts| !server_only(parts.uri.path()));
    #[cfg(not(feature = "ssr"))]
    let hydrate = true;
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                // The stylesheet under the same content-versioned path as
                // the scripts (the server sets `site_pkg_dir`).
                <link rel="stylesheet" id="leptos" href=format!("/{}/countersign.css", options.site_pkg_dir)/>
                <link rel="icon" type="image/svg+xml" href="/favicon.svg"/>
                // Installable on a phone; Web Push through /sw.js.
                <link rel="manifest" href="/manifest.webmanifest"/>
                <meta name="theme-color" content="#1f5fbf"/>
                // Passkey ceremonies: plain JavaScript, apart from the wasm.
                <script src="/passkeys.js" defer nonce=leptos::nonce::use_nonce()></script>
                // Drafts kept across an ended session; the idle warning.
                <script src="/session.js" defer nonce=leptos::nonce::use_nonce()></script>
                // Notification settings on the account page (email, Web Push).
                <script src="/reach.js" defer nonce=leptos::nonce::use_nonce()></script>
                {use_context::<Viewer>().map(|v| view! {
                    <meta name="countersign-idle-secs" content=v.idle_timeout_secs.to_string()/>
                })}
                {hydrate.then(|| view! { <HydrationScripts options/> })}
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// The product's name, the end of every page title.
pub const BRAND: &str = "Countersign";

/// A page's title: "(3) Approval queue · Countersign" when 3 proposals wait
/// for the reader's approval, "(99+) …" past 99, no count when none do.
pub fn page_title(page: &str, waiting: u32) -> String {
    let title = if page == BRAND { BRAND.to_owned() } else { format!("{page} · {BRAND}") };
    match waiting {
        0 => title,
        1..=99 => format!("({waiting}) {title}"),
        _ => format!("(99+) {title}"),
    }
}

/// Bumped by the queue's live refresh, so the count in the title follows.
#[derive(Clone, Copy)]
pub struct WaitingRefresh(pub RwSignal<u64>);

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    // The signed-in user is known on the server; share it with the browser
    // during hydration so both render the same page.
    let viewer = SharedValue::<_, crate::codec::Mini>::new_with_encoding(use_context::<Viewer>).into_inner();
    let approver = viewer.as_ref().is_some_and(Viewer::can_approve);
    if let Some(v) = viewer.clone() {
        provide_context(v);
    }
    let refresh = RwSignal::new(0u64);
    provide_context(WaitingRefresh(refresh));
    // Each page names itself with a <Title text=…/>; this adds the brand and,
    // for someone who can approve, how many proposals wait for them.
    let title = if approver {
        let waiting = crate::codec::page(move || refresh.get(), |_| load_waiting_count());
        view! {
            <Transition fallback=|| view! { <Title formatter=|page: String| page_title(&page, 0)/> }>
                {move || Suspend::new(async move {
                    let n = waiting.await.unwrap_or(0);
                    view! { <Title formatter=move |page: String| page_title(&page, n)/> }
                })}
            </Transition>
        }
        .into_any()
    } else {
        view! { <Title formatter=|page: String| page_title(&page, 0)/> }.into_any()
    };
    view! {
        <Title text=BRAND/>
        {title}
        <Router>
            <TopBar viewer/>
            <main>
                // Filled by /session.js only (a draft put back, the idle
                // warning): the app renders it empty and never again.
                <div id="session-notices" class="session-notices"></div>
                // Async: the server sends each page whole, so it reads and works
                // without JavaScript (forms post, nothing waits on streaming).
                <Routes fallback=|| view! { <section class="notfound"><Title text="Page not found"/><h1>"Page not found"</h1><p><a href="/">"Go to the queue"</a></p></section> }>
                    <Route path=path!("/") view=HomePage ssr=SsrMode::Async/>
                    <Route path=path!("/login") view=LoginPage ssr=SsrMode::Async/>
                    <Route path=path!("/proposals/:id") view=ProposalPage ssr=SsrMode::Async/>
                    <Route path=path!("/proposals/:id/approve") view=ApprovePage ssr=SsrMode::Async/>
                    <Route path=path!("/bulk") view=BulkDecisionPage ssr=SsrMode::Async/>
                    <Route path=path!("/batches") view=BatchesPage ssr=SsrMode::Async/>
                    <Route path=path!("/batches/:id") view=BatchPage ssr=SsrMode::Async/>
                    <Route path=path!("/operations") view=OperationsPage ssr=SsrMode::Async/>
                    <Route path=path!("/operations/:id/resolve") view=ResolveOperationPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin") view=AdminPage ssr=SsrMode::Async/>
                    <Route path=path!("/account") view=AccountPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/loop") view=HumanLoopPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/policy") view=PolicyPage ssr=SsrMode::Async/>
                </Routes>
            </main>
        </Router>
    }
}

/// In the browser, a server-only page the app's router was sent to (not by
/// a click, which `leave_server_only_links_to_the_browser` keeps from it:
/// by `use_navigate`, as `LoadError` sends an ended session to sign-in):
/// the server renders it, so load it from there.
#[cfg(not(feature = "ssr"))]
#[component]
fn FullLoad() -> impl IntoView {
    let url = leptos_router::hooks::use_url().get_untracked();
    let search = if url.search().is_empty() { String::new() } else { format!("?{}", url.search()) };
    let hash = match url.hash() {
        "" => String::new(),
        h if h.starts_with('#') => h.to_owned(),
        h => format!("#{h}"),
    };
    let _ = window().location().assign(&format!("{}{search}{hash}", url.path()));
}

#[component]
fn TopBar(viewer: Option<Viewer>) -> impl IntoView {
    let who = viewer.map(|v| {
        let admin = v.is_admin().then(|| view! { <a href="/admin">"Admin"</a> });
        let roles = v.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ");
        view! {
            <nav class="who">
                <a href="/">"Queue"</a>
                <a href="/operations">"Operations"</a>
                {admin}
                <a href="/account" id="account-link">
                    "Account"
                    {(v.unread_notices > 0).then(|| view! {
                        <span class="badge badge-notice" id="notice-count" title="New notices about your account">
                            {v.unread_notices.to_string()}
                        </span>
                    })}
                </a>
                <span class="user" id="signed-in-as">{v.username.clone()}" "<span class="muted">{format!("({roles})")}</span></span>
                <form method="post" action="/logout" class="inline">
                    <CsrfField token=v.csrf_token.clone()/>
                    <button type="submit" class="link">"Sign out"</button>
                </form>
            </nav>
        }
    });
    view! {
        <header class="topbar">
            <a class="brand" href="/">"Countersign"</a>
            {who}
        </header>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_only_matches_its_routes_whole_and_nothing_else() {
        for path in [
            "/login",
            "/login/",
            "/proposals/prop_1/approve",
            "/bulk",
            "/batches",
            "/batches/bat_1",
            "/operations/op_1/resolve",
            "/account",
            "/admin/loop",
            "/admin/policy",
        ] {
            assert!(server_only(path), "{path}");
        }
        for path in [
            "/",
            "",
            "/proposals/prop_1",
            "/proposals//approve",
            "/operations",
            "/admin",
            "/admin/loopy",
            "/batches/bat_1/lines",
            "/login/x",
            "/accounts",
        ] {
            assert!(!server_only(path), "{path}");
        }
    }

    /// Each server-only pattern is one of the app's routes, as the router
    /// writes it, so a renamed route cannot silently start hydrating.
    #[cfg(feature = "ssr")]
    #[test]
    fn every_server_only_pattern_is_a_route_of_the_app() {
        let routes: Vec<String> =
            leptos_axum::generate_route_list(App).into_iter().map(|r| r.path().to_owned()).collect();
        for pattern in SERVER_ONLY {
            // axum's spelling of a parameter: `{id}` for `:id`.
            let axum: Vec<String> = pattern
                .split('/')
                .map(|s| s.strip_prefix(':').map_or_else(|| s.to_owned(), |name| format!("{{{name}}}")))
                .collect();
            let axum = axum.join("/");
            assert!(routes.contains(&axum), "{axum} in {routes:?}");
        }
    }
}
