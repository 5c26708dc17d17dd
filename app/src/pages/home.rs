use leptos::prelude::*;

/// Placeholder landing page. It proves the SSR + hydration pipeline: the
/// `data-hydrated` attribute flips to `true` only once the wasm bundle runs.
#[component]
pub fn HomePage() -> impl IntoView {
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    view! {
        <section class="home" data-hydrated=move || hydrated.get().to_string()>
            <h1>"Countersign"</h1>
            <p>
                "Agents propose payments. Humans approve them. "
                "Only an approved, exact request reaches the payment rail."
            </p>
            <p class="muted">"The review console is being built: sign-in and the approval queue come next."</p>
        </section>
    }
}
