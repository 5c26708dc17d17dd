//! A shutdown signal shared by the server and its background tasks.

use tokio::sync::watch;

#[derive(Clone)]
pub struct Shutdown(watch::Receiver<bool>);

pub struct Trigger(watch::Sender<bool>);

pub fn channel() -> (Trigger, Shutdown) {
    let (tx, rx) = watch::channel(false);
    (Trigger(tx), Shutdown(rx))
}

impl Trigger {
    pub fn fire(&self) {
        let _ = self.0.send(true);
    }
}

impl Shutdown {
    /// Resolves once the trigger fired (immediately if it already has).
    pub async fn wait(&self) {
        let mut rx = self.0.clone();
        let _ = rx.wait_for(|fired| *fired).await;
    }
}
