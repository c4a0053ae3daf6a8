//! Turns to run a service: at most `workers` requests run one at once,
//! however many connections are open and over whichever transport (HTTP
//! and SSH share one [`Permits`]), and one client address holds at most
//! its share of them (half, at least one), so that other clients are
//! served while one keeps the server busy.

use crate::per_address::{AddressGuard, PerAddress};
use std::net::IpAddr;
use std::sync::Arc;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// The turns of a server; clones share them.
#[derive(Clone)]
pub struct Permits {
    workers: Arc<Semaphore>,
    per_address: Arc<PerAddress>,
    /// Woken whenever an address gives a turn back.
    released: Arc<Notify>,
}

/// A turn, given back when dropped.
pub struct Permit {
    _worker: OwnedSemaphorePermit,
    address: Option<AddressGuard>,
    released: Arc<Notify>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        drop(self.address.take());
        self.released.notify_waiters();
    }
}

impl Permits {
    /// `workers` turns (at least one); an address holds at most half.
    pub fn new(workers: usize) -> Permits {
        let workers = workers.max(1);
        Permits {
            workers: Arc::new(Semaphore::new(workers)),
            per_address: PerAddress::new(workers.div_ceil(2)),
            released: Arc::new(Notify::new()),
        }
    }

    /// Waits for a turn for a client at `address` (`None`: unknown, only
    /// the overall limit applies).
    pub async fn acquire(&self, address: Option<IpAddr>) -> Permit {
        let guard = match address {
            None => None,
            Some(address) => Some(loop {
                let released = self.released.notified();
                tokio::pin!(released);
                released.as_mut().enable();
                if let Some(guard) = self.per_address.try_take(address) {
                    break guard;
                }
                released.await;
            }),
        };
        let worker = self
            .workers
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        Permit {
            _worker: worker,
            address: guard,
            released: self.released.clone(),
        }
    }
}

impl Permits {
    /// A turn for a client at `address` if that address holds fewer than
    /// its share, waiting for a free worker; `None` at once if it holds
    /// its share already (for transports that cannot ask a client to come
    /// back later, as HTTP's waiting connection does).
    pub async fn acquire_unless_busy(&self, address: IpAddr) -> Option<Permit> {
        let guard = self.per_address.try_take(address)?;
        let worker = self
            .workers
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        Some(Permit {
            _worker: worker,
            address: Some(guard),
            released: self.released.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::task::Poll;

    /// Polls `future` once.
    async fn ready_now<F: Future + Unpin>(future: &mut F) -> bool {
        std::future::poll_fn(|cx| Poll::Ready(std::pin::Pin::new(&mut *future).poll(cx).is_ready()))
            .await
    }

    #[tokio::test]
    async fn an_address_holds_half_the_turns_and_others_are_served() {
        let permits = Permits::new(4);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "2001:db8::1".parse().unwrap();
        let first = permits.acquire(Some(a)).await;
        let _second = permits.acquire(Some(a)).await;
        let mut third = Box::pin(permits.acquire(Some(a)));
        assert!(!ready_now(&mut third).await);
        let _b1 = permits.acquire(Some(b)).await;
        let b2 = permits.acquire(Some(b)).await;
        // All four turns are taken now.
        let mut anonymous = Box::pin(permits.acquire(None));
        assert!(!ready_now(&mut anonymous).await);
        drop(b2);
        let _anonymous = anonymous.await;
        assert!(!ready_now(&mut third).await);
        drop(first);
        drop(_anonymous);
        let _third = third.await;
    }

    #[tokio::test]
    async fn clones_share_the_turns_and_a_busy_address_is_refused_at_once() {
        let permits = Permits::new(2);
        let other = permits.clone();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let held = permits.acquire(Some(a)).await;
        assert!(other.acquire_unless_busy(a).await.is_none());
        let b1 = other.acquire_unless_busy(b).await.unwrap();
        // Both turns are taken, across the clones: a third waits.
        let mut waiting = Box::pin(permits.acquire(None));
        assert!(!ready_now(&mut waiting).await);
        drop(b1);
        let _waited = waiting.await;
        drop(held);
        assert!(other.acquire_unless_busy(a).await.is_some());
    }
}
