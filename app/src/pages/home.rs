use leptos::prelude::*;

use crate::pages::queue::QueuePage;
use crate::views::Viewer;

/// `/`: the queue for a signed-in user, a welcome with a sign-in link otherwise.
/// The `data-hydrated` attribute flips to `true` once the wasm bundle runs.
#[component]
pub fn HomePage() -> impl IntoView {
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    let signed_in = use_context::<Viewer>().is_some();
    // Signed out on a filtered queue (`/?status=rejected`, a shared link):
    // sign in and come back to the same filters.
    let location = leptos_router::hooks::use_location();
    let sign_in = move || {
        let search = location.search.get();
        if search.is_empty() {
            "/login".to_owned()
        } else {
            countersign_domain::login_href(&format!("/?{search}"))
        }
    };
    view! {
        <div class="home" data-hydrated=move || hydrated.get().to_string()>
            {if signed_in {
                view! { <QueuePage/> }.into_any()
            } else {
                view! {
                    <section class="card narrow">
                        <h1>"Countersign"</h1>
                        <p>"Agents propose payments. Humans approve them. Only an approved, exact request reaches the payment rail."</p>
                        <p><a class="button primary" id="home-sign-in" href=sign_in>"Sign in"</a></p>
                    </section>
                }.into_any()
            }}
        </div>
    }
}
