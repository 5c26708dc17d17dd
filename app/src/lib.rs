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
    leptos::mount::hydrate_body(App);
}
