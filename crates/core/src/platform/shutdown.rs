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
    /// Whether the trigger fired.
    pub fn fired(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once the trigger fired (immediately if it already has).
    pub async fn wait(&self) {
        let mut rx = self.0.clone();
        let _ = rx.wait_for(|fired| *fired).await;
    }
}

/// Runs `tick` every `period` (the first at once) until `shutdown` fires;
/// a tick that overruns delays the next one.
pub async fn every<F, Fut>(period: std::time::Duration, shutdown: &Shutdown, mut tick: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = shutdown.wait() => return,
        }
        tick().await;
    }
}

/// When the process is stopping (long waits return early).
pub trait Lifecycle {
    fn shutdown(&self) -> &crate::platform::shutdown::Shutdown;
}
