use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    path, SsrMode,
};

use crate::api::load_waiting_count;
use crate::components::CsrfField;
use crate::pages::{
    account::AccountPage,
    admin::AdminPage,
    approve::ApprovePage,
    batch::{BatchPage, BatchesPage},
    bulk::BulkDecisionPage,
    home::HomePage,
    human_loop::HumanLoopPage,
    login::LoginPage,
    operations::{OperationsPage, ResolveOperationPage},
    proposal::ProposalPage,
};
use crate::views::Viewer;

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
                <HydrationScripts options/>
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
                    <Route path=path!("/admin/policy") view=crate::pages::policy::PolicyPage ssr=SsrMode::Async/>
                </Routes>
            </main>
        </Router>
    }
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
