use leptos::prelude::*;
use leptos_meta::Title;

use crate::components::CsrfField;
use crate::views::Viewer;

/// The signed-in person's passkeys: list, register (named; with an
/// assertion by one they hold, or an enrolment code for their first), remove
/// (with an assertion); and the notices about their account. The ceremonies
/// need the browser's WebAuthn, so `/passkeys.js` does them (plain
/// JavaScript, not wasm); this page only lays out what it fills in. The
/// same for their notifications (email, Web Push on each device):
/// `/reach.js`.
#[component]
pub fn AccountPage() -> impl IntoView {
    // Signed out, the server sends the sign-in page first (`load_viewer`).
    let viewer = use_context::<Viewer>();
    let csrf = viewer.as_ref().map(|v| v.csrf_token.clone()).unwrap_or_default();
    let reach_csrf = csrf.clone();
    let can_approve = viewer.as_ref().is_some_and(Viewer::can_approve);
    let username = viewer.map(|v| v.username).unwrap_or_default();
    view! {
        <Title text="Your account"/>
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
                <label>
                    "Enrolment code "
                    <span class="muted small">"(only for your first passkey, or after losing all: your admins give you one)"</span>
                    <input name="enrolment_code" autocomplete="off" spellcheck="false" maxlength="64"/>
                </label>
                <p class="muted small">
                    "With a passkey already registered, your browser asks for it to allow the new one. A new passkey "
                    "can approve payments after a cool-off (a day by default), or sooner once an admin confirms it."
                </p>
                <button type="submit" class="primary" id="passkey-register-button">"Register a passkey"</button>
            </form>
            <p id="passkey-status" role="status" class="muted"></p>
            <noscript><p>"Passkeys need JavaScript in this browser."</p></noscript>
        </section>
        <section class="card narrow stack" id="reach">
            <h2>"Notifications"</h2>
            <p>
                "Be told when a payment you can approve arrives, and again before one expires. A notification \
                 links to the payment here: you sign in and decide as usual. Nothing is ever approved from an \
                 email or a notification."
            </p>
            <CsrfField token=reach_csrf/>
            <form id="email-form" class="stack">
                <label>"Email" <input id="email-input" name="email" type="email" maxlength="254" autocomplete="email"/></label>
                <p id="email-off" class="muted small" hidden=true>
                    "This deployment has no mail relay set up yet: your address is kept, nothing is sent."
                </p>
                <button type="submit" id="email-save">"Save email"</button>
            </form>
            <h3>"Devices"</h3>
            <ul id="device-list" class="plain"></ul>
            <label>"Name for this device" <input id="device-label" maxlength="100" autocomplete="off"/></label>
            <button type="button" class="primary" id="push-subscribe" disabled=true>"Notify this device"</button>
            <p id="push-unsupported" class="muted small" hidden=true>
                "This browser cannot get push notifications here. On an iPhone, add Countersign to the Home Screen \
                 (Share, Add to Home Screen) and open it from there."
            </p>
            <h3>"Quiet hours"</h3>
            <form id="quiet-form" class="stack">
                <p class="muted small">
                    "No arrivals or reminders then, by email or push. A payment escalated to you still reaches you."
                </p>
                <div class="pair">
                    <label>"From" <input id="quiet-from" type="time" required=true/></label>
                    <label>"Until" <input id="quiet-until" type="time" required=true/></label>
                </div>
                <label>"Time zone" <input id="quiet-zone" maxlength="64" autocomplete="off" required=true/></label>
                <div class="pair">
                    <button type="submit" id="quiet-save">"Save quiet hours"</button>
                    <button type="button" class="link" id="quiet-clear">"No quiet hours"</button>
                </div>
            </form>
            <p id="reach-status" role="status" class="muted"></p>
            <noscript><p>"Notifications are set up with JavaScript in this browser."</p></noscript>
        </section>
        {can_approve.then(|| view! {
            <section class="card narrow stack" id="delegation" data-username=username.clone()>
                <h2>"Approving while you are away"</h2>
                <p>
                    "Let another approver approve for you between two dates. Their approvals say they were given \
                     for you, use the lower of your two limits, and follow every rule for both of you. If it would \
                     let them count for an approval group they are not in, an admin must confirm it first."
                </p>
                <ul id="delegation-list" class="plain"></ul>
                <form id="delegation-form" class="stack">
                    <label>"Approver (username)" <input id="delegation-to" maxlength="64" autocomplete="off" required=true/></label>
                    <div class="pair">
                        <label>"From" <input id="delegation-from" type="date" required=true/></label>
                        <label>"Until (included)" <input id="delegation-until" type="date" required=true/></label>
                    </div>
                    <button type="submit" id="delegation-save">"Delegate"</button>
                </form>
                <p id="delegation-status" role="status" class="muted"></p>
            </section>
        })}
        <section class="card narrow stack" id="your-sessions">
            <h2>"Where you are signed in"</h2>
            <p><a href="/account/sessions" rel="external">"Your sessions, and signing out everywhere"</a></p>
        </section>
        <section class="card narrow stack" id="notices">
            <h2>"About your account"</h2>
            <p class="muted small">"Every passkey added to or removed from your account is listed here. If one was not you, tell your admins now."</p>
            <ul id="notice-list" class="plain" data-notice-list="/api/v1/me/notices"></ul>
            <button type="button" class="link" id="notices-read" data-notices-read="/api/v1/me/notices/read">"Mark all read"</button>
        </section>
    }
}
