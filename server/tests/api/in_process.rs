//! Servers sharing one process (the in-process harness, helpers.rs): a
//! server starting beside others must not disturb the pages they render.
//!
//! Starting a server walks the console's routes out of the app, which
//! renders it with resource loading switched off by a flag global to the
//! process (`leptos_server`'s `SuppressResourceLoad`). A page whose data
//! started loading meanwhile, in any other server of the process, waited
//! forever. The routes are now walked once per process (`http::router`).

use crate::console_client::Console;
use crate::helpers::*;
use reqwest::Method;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pages_render_while_other_servers_start_beside_them() {
    let server = TestServer::start().await;
    let ana = Arc::new(Console::sign_in(&server, "ana").await);
    let starting = Arc::new(AtomicBool::new(true));
    let mut readers = Vec::new();
    for n in 0..6 {
        let (ana, starting) = (ana.clone(), starting.clone());
        readers.push(tokio::spawn(async move {
            let mut pages = 0;
            while starting.load(Ordering::Relaxed) {
                let path = ["/", "/account", "/admin", "/operations"][(n + pages) % 4];
                let page = tokio::time::timeout(Duration::from_secs(20), ana.bare(Method::GET, path).send())
                    .await
                    .unwrap_or_else(|_| panic!("{path} never answered while other servers started"))
                    .expect(path);
                // ana is an approver: the admin page says no, with its status.
                let expected = if path == "/admin" { 403 } else { 200 };
                assert_eq!(page.status(), expected, "{path}");
                pages += 1;
            }
            pages
        }));
    }
    for _ in 0..15 {
        // On SQLite whatever the run's backend: only starting matters here.
        drop(TestServer::start_with("[database]\n").await);
    }
    starting.store(false, Ordering::Relaxed);
    for reader in readers {
        assert!(reader.await.unwrap() > 0, "every reader read pages meanwhile");
    }
}
