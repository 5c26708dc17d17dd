//! The Countersign console: a Leptos app compiled twice, into the server (`ssr`)
//! and to WebAssembly (`hydrate`). It never touches the database: everything it
//! shows comes through the server's implementation of `console::ConsolePort`.
#![recursion_limit = "256"]

pub mod api;
pub mod codec;
pub mod components;
pub mod console;
pub mod pages;
pub mod shell;
pub mod views;

pub use shell::{content_security_policy, shell, App};

/// Entry point of the WebAssembly bundle: hydrates the server-rendered page.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leave_server_only_links_to_the_browser();
    leptos::mount::hydrate_body(App);
}

/// A click on a link to a server-only page (`shell::SERVER_ONLY`) is kept
/// from the router, which listens on the window: the browser loads the page
/// as it would any link, one entry in the history. (The router would render
/// `FullLoad`, which loads it too, but after the router has added the
/// address to the history itself.)
#[cfg(feature = "hydrate")]
fn leave_server_only_links_to_the_browser() {
    use leptos::wasm_bindgen::{closure::Closure, JsCast};
    use leptos::web_sys::{Element, HtmlAnchorElement, MouseEvent};
    let on_click = Closure::<dyn Fn(MouseEvent)>::new(|ev: MouseEvent| {
        let anchor = ev
            .target()
            .and_then(|t| t.dyn_into::<Element>().ok())
            .and_then(|el| el.closest("a[href]").ok().flatten())
            .and_then(|a| a.dyn_into::<HtmlAnchorElement>().ok());
        let Some(a) = anchor else { return };
        let same_site = leptos::prelude::window().location().origin().is_ok_and(|here| here == a.origin());
        if same_site && shell::server_only(&a.pathname()) {
            ev.stop_propagation();
        }
    });
    let _ = leptos::prelude::document().add_event_listener_with_callback("click", on_click.as_ref().unchecked_ref());
    // Listens for the page's life.
    on_click.forget();
}
