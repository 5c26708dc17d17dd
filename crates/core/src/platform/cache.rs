//! A small bounded map for read caches that must never serve a stale value
//! for long: status-poll views and agent credentials (docs/ARCHITECTURE.md,
//! "Read caches").
//!
//! Staleness is ruled out by two rules:
//! - every change drops its entry (`invalidate`) or everything (`clear`)
//!   after the change commits: see [`crate::platform::changes`];
//! - a value read from the database is kept only if nothing was dropped
//!   between the moment the read began (`ticket`) and the `fill`. A reader
//!   that read the old row just before a writer committed would otherwise put
//!   it back after the writer's invalidation.
//!
//! Bounded by two generations of `capacity` entries each: a full young
//! generation becomes the old one and the previous old one is dropped, and
//! a hit in the old generation moves the entry back to the young one. That
//! keeps what is used without an LRU list.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

pub struct ReadCache<V> {
    inner: Mutex<Generations<V>>,
    capacity: usize,
}

/// Keys are ids and key digests the server made, never chosen by a client
/// (a value is only kept for what exists): a fast hasher is safe here.
type Map<V> = HashMap<String, V, foldhash::fast::RandomState>;

struct Generations<V> {
    young: Map<V>,
    old: Map<V>,
    /// Bumped by every invalidation; see `ticket`.
    epoch: u64,
}

/// The cache's epoch when a database read began.
#[derive(Debug, Clone, Copy)]
pub struct Ticket(u64);

impl<V: Clone> ReadCache<V> {
    pub fn new(capacity: usize) -> Self {
        ReadCache {
            inner: Mutex::new(Generations { young: Map::default(), old: Map::default(), epoch: 0 }),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Generations<V>> {
        // A panic while holding this lock cannot leave a half-written entry
        // behind (every update is one map call), so a poisoned lock is usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, key: &str) -> Option<V> {
        let mut g = self.lock();
        if let Some(v) = g.young.get(key) {
            return Some(v.clone());
        }
        let v = g.old.remove(key)?;
        g.insert_young(key.to_owned(), v.clone(), self.capacity);
        Some(v)
    }

    /// Take before reading what will be filled in.
    pub fn ticket(&self) -> Ticket {
        Ticket(self.lock().epoch)
    }

    /// Keeps `value` unless something was invalidated since `ticket`.
    /// Returns whether it was kept.
    pub fn fill(&self, ticket: Ticket, key: &str, value: V) -> bool {
        let mut g = self.lock();
        if g.epoch != ticket.0 {
            return false;
        }
        g.insert_young(key.to_owned(), value, self.capacity);
        true
    }

    pub fn invalidate(&self, key: &str) {
        let mut g = self.lock();
        g.epoch += 1;
        g.young.remove(key);
        g.old.remove(key);
    }

    pub fn clear(&self) {
        let mut g = self.lock();
        g.epoch += 1;
        g.young.clear();
        g.old.clear();
    }

    pub fn len(&self) -> usize {
        let g = self.lock();
        g.young.len() + g.old.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `key`'s value from `cache`, or else `load`'s, kept in `cache` unless an
/// invalidation raced the load. Without a cache (`None`: not trusted right
/// now), always `load`. The ticket is taken before `load` runs (a future
/// does nothing until awaited).
pub async fn read_through<V: Clone, E>(
    cache: Option<&ReadCache<V>>,
    key: &str,
    load: impl Future<Output = Result<V, E>>,
) -> Result<V, E> {
    let Some(cache) = cache else { return load.await };
    if let Some(value) = cache.get(key) {
        return Ok(value);
    }
    let ticket = cache.ticket();
    let value = load.await?;
    cache.fill(ticket, key, value.clone());
    Ok(value)
}

impl<V> Generations<V> {
    fn insert_young(&mut self, key: String, value: V, capacity: usize) {
        if self.young.len() >= capacity && !self.young.contains_key(&key) {
            self.old = std::mem::take(&mut self.young);
        }
        self.young.insert(key, value);
    }
}

/// A proposal as its agent's status poll sends it: the serialized view and
/// its `ETag`, with the owner to check every request against.
#[derive(Debug)]
pub struct PolledView {
    pub tenant_id: String,
    pub agent_id: String,
    pub etag: String,
    pub body: bytes::Bytes,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_then_get_then_invalidate() {
        let cache = ReadCache::new(4);
        assert_eq!(cache.get("a"), None);
        let t = cache.ticket();
        assert!(cache.fill(t, "a", 1));
        assert_eq!(cache.get("a"), Some(1));
        cache.invalidate("a");
        assert_eq!(cache.get("a"), None);
    }

    #[test]
    fn a_read_that_raced_an_invalidation_is_not_kept() {
        let cache = ReadCache::new(4);
        let before_write = cache.ticket();
        // a writer commits and invalidates while the reader still holds the old row
        cache.invalidate("a");
        assert!(!cache.fill(before_write, "a", "old row"));
        assert_eq!(cache.get("a"), None);
        // an invalidation of anything else also refuses the fill: coarse, but never stale
        let t = cache.ticket();
        cache.invalidate("b");
        assert!(!cache.fill(t, "a", "row"));
        let t = cache.ticket();
        cache.clear();
        assert!(!cache.fill(t, "a", "row"));
        let t = cache.ticket();
        assert!(cache.fill(t, "a", "new row"));
        assert_eq!(cache.get("a"), Some("new row"));
    }

    #[test]
    fn bounded_to_two_generations_and_keeps_what_is_used() {
        let cache = ReadCache::new(3);
        for i in 0..100 {
            cache.fill(cache.ticket(), &format!("k{i}"), i);
            // "hot" is read all along, so it survives every generation change
            if i == 0 {
                cache.fill(cache.ticket(), "hot", -1);
            }
            assert_eq!(cache.get("hot"), Some(-1), "after {i}");
            assert!(cache.len() <= 6, "{} entries", cache.len());
        }
        assert_eq!(cache.get("k0"), None, "the oldest unused entries are gone");
        assert_eq!(cache.get("k99"), Some(99));
    }

    #[tokio::test]
    async fn read_through_loads_once_and_never_keeps_a_raced_load() {
        let cache = ReadCache::new(4);
        let loaded = read_through(Some(&cache), "a", async { Ok::<_, ()>(1) }).await;
        assert_eq!(loaded, Ok(1));
        let again = read_through(Some(&cache), "a", async { Ok::<_, ()>(2) }).await;
        assert_eq!(again, Ok(1), "served from the cache");
        // a change lands while "b" is being loaded: the loaded value is answered, not kept
        let raced = read_through(Some(&cache), "b", async {
            cache.invalidate("b");
            Ok::<_, ()>("old".len())
        })
        .await;
        assert_eq!(raced, Ok(3));
        assert_eq!(cache.get("b"), None);
        assert_eq!(read_through(Some(&cache), "c", async { Err::<usize, _>("gone") }).await, Err("gone"));
        assert_eq!(cache.get("c"), None, "failures are not kept");
        assert_eq!(read_through(None, "a", async { Ok::<_, ()>(9) }).await, Ok(9), "no cache: always loads");
    }

    #[test]
    fn clear_drops_everything() {
        let cache = ReadCache::new(2);
        for k in ["a", "b", "c"] {
            cache.fill(cache.ticket(), k, ());
        }
        assert!(!cache.is_empty());
        cache.clear();
        assert!(cache.is_empty());
    }
}
