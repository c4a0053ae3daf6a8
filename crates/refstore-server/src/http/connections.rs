//! The open connections of the HTTP listener, and room for new ones.
//!
//! Clients keep connections open between requests (HTTP keep-alive), and
//! some open a new one for every request while the earlier ones idle until
//! the server closes them (JGit over HTTPS does). Counting every open
//! connection against `--max-connections-per-ip` would refuse such a
//! client after a few rounds although it runs one request at a time. So
//! when an address is at its limit (or the server at `--max-connections`),
//! its connection idle the longest (the server's, for the overall limit)
//! is closed to make room, and a new connection is refused only when the
//! address has that many requests in flight: only connections answering
//! a request, or receiving one, hold their place.

use super::pace::Wire;
use crate::per_address::AddressKey;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// The connections open now.
pub(super) struct Connections {
    max_total: usize,
    max_per_address: usize,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    next_id: u64,
    by_id: HashMap<u64, Entry>,
}

struct Entry {
    key: AddressKey,
    wire: Arc<Wire>,
    close: Arc<Notify>,
}

/// Why a connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Full {
    /// Every connection of the server is busy.
    Server,
    /// Every connection of the client's address is busy.
    Address,
}

/// An admitted connection's place, given back when dropped.
pub(super) struct Place {
    owner: Arc<Connections>,
    id: u64,
    /// Notified when the connection is to close, to make room.
    pub close: Arc<Notify>,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.owner.lock().by_id.remove(&self.id);
    }
}

impl Connections {
    /// At most `max_total` connections, `max_per_address` per address
    /// (each at least 1).
    pub fn new(max_total: usize, max_per_address: usize) -> Arc<Connections> {
        Arc::new(Connections {
            max_total: max_total.max(1),
            max_per_address: max_per_address.max(1),
            open: Mutex::new(Open::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admits a connection from `address` whose activity `wire` shows,
    /// closing idle connections to make room if need be.
    pub fn admit(self: &Arc<Self>, address: IpAddr, wire: Arc<Wire>) -> Result<Place, Full> {
        let key = AddressKey::of(address);
        let mut open = self.lock();
        if open.by_id.len() >= self.max_total && !open.evict_oldest_idle(|_| true) {
            return Err(Full::Server);
        }
        let of_address = open.by_id.values().filter(|e| e.key == key).count();
        if of_address >= self.max_per_address && !open.evict_oldest_idle(|e| e.key == key) {
            return Err(Full::Address);
        }
        let id = open.next_id;
        open.next_id += 1;
        let close = Arc::new(Notify::new());
        open.by_id.insert(
            id,
            Entry {
                key,
                wire,
                close: close.clone(),
            },
        );
        Ok(Place {
            owner: self.clone(),
            id,
            close,
        })
    }

    /// The connections open now (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().by_id.len()
    }
}

impl Open {
    /// Closes the connection idle the longest among those `eligible`
    /// picks; its place is free at once. False if none is idle.
    fn evict_oldest_idle(&mut self, eligible: impl Fn(&Entry) -> bool) -> bool {
        let oldest = self
            .by_id
            .iter()
            .filter(|(_, e)| eligible(e))
            .filter_map(|(id, e)| e.wire.idle_since().map(|since| (since, *id)))
            .min();
        let Some((_, id)) = oldest else {
            return false;
        };
        if let Some(entry) = self.by_id.remove(&id) {
            // A permit is stored if the connection is not waiting yet.
            entry.close.notify_one();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn idle_connections_make_room_and_busy_ones_hold_it() {
        let connections = Connections::new(10, 2);
        let a = address("10.0.0.1");
        let (first_wire, second_wire) = (Arc::new(Wire::opened()), Arc::new(Wire::opened()));
        let first = connections.admit(a, first_wire.clone()).unwrap();
        let _busy_first = first_wire.request_started();
        let _second = connections.admit(a, second_wire.clone()).unwrap();
        // The second is idle: a third connection takes its place.
        let third_wire = Arc::new(Wire::opened());
        let _third = connections.admit(a, third_wire.clone()).unwrap();
        assert_eq!(connections.len(), 2);
        // Now both are busy: the address is refused, others are not.
        let _busy_third = third_wire.request_started();
        let refused = connections.admit(a, Arc::new(Wire::opened()));
        assert_eq!(refused.err(), Some(Full::Address));
        assert!(connections
            .admit(address("10.0.0.2"), Arc::new(Wire::opened()))
            .is_ok());
        drop(first);
        assert!(connections.admit(a, Arc::new(Wire::opened())).is_ok());
    }

    #[tokio::test]
    async fn the_connection_idle_the_longest_is_told_to_close() {
        let connections = Connections::new(2, 2);
        let (old, new) = (Arc::new(Wire::opened()), Arc::new(Wire::opened()));
        let older = connections.admit(address("10.0.0.1"), old.clone()).unwrap();
        let newer = connections.admit(address("10.0.0.2"), new.clone()).unwrap();
        // Ends a request on `new` once the connections' clock (in
        // milliseconds) has moved on: idle since later than `old`.
        while new.idle_since() <= old.idle_since() {
            tokio::task::yield_now().await;
            drop(new.request_started());
        }
        let _third = connections
            .admit(address("10.0.0.3"), Arc::new(Wire::opened()))
            .unwrap();
        // Eviction stores a permit in the connection's `close` at once.
        older.close.notified().await;
        let newer_told = tokio::select! {
            biased;
            () = newer.close.notified() => true,
            () = std::future::ready(()) => false,
        };
        assert!(!newer_told, "the newer idle connection was closed");
    }
}
