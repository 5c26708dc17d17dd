use leptos::prelude::*;
use leptos_meta::Title;

use crate::components::CsrfField;
use crate::views::Viewer;

/// The signed-in person's passkeys: list, register (named), remove. The
/// ceremonies need the browser's WebAuthn, so `/passkeys.js` does them
/// (plain JavaScript, not wasm); this page only lays out what it fills in.
#[component]
pub fn AccountPage() -> impl IntoView {
    // Signed out, the server sends the sign-in page first (`load_viewer`).
    let csrf = use_context::<Viewer>().map(|v| v.csrf_token).unwrap_or_default();
    view! {
        <Title text="Passkeys"/>
        <section class="card narrow stack" id="account">
            <h1>"Your passkeys"</h1>
            <p>
                "A passkey signs your approval of the exact payment you are shown, once: a changed amount or payee, \
                 or a replay, is refused. Approving larger payments needs one; register one on each device you \
                 approve from."
            </p>
            <ul id="passkey-list" class="plain" data-passkey-list="/api/v1/me/passkeys"></ul>
            <form id="passkey-register" class="stack" data-passkey-register="/api/v1/me/passkeys">
                <CsrfField token=csrf/>
                <label>"Name for this passkey" <input name="name" required maxlength="100" value="This device"/></label>
                <button type="submit" class="primary" id="passkey-register-button">"Register a passkey"</button>
            </form>
            <p id="passkey-status" role="status" class="muted"></p>
            <noscript><p>"Passkeys need JavaScript in this browser."</p></noscript>
        </section>
    }
}
