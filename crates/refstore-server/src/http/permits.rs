//! A counting semaphore: at most `workers` requests run a service at once,
//! however many connections are open.

use std::sync::{Condvar, Mutex};

/// Permits to run a service.
pub struct Permits {
    free: Mutex<usize>,
    released: Condvar,
}

/// A permit, given back when dropped.
pub struct Permit<'a>(&'a Permits);

impl Permits {
    /// `n` permits (at least one).
    pub fn new(n: usize) -> Permits {
        Permits {
            free: Mutex::new(n.max(1)),
            released: Condvar::new(),
        }
    }

    /// Waits for a permit.
    pub fn acquire(&self) -> Permit<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.released.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.released.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn no_more_than_n_at_once() {
        let permits = Permits::new(3);
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..12 {
                s.spawn(|| {
                    let _permit = permits.acquire();
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    running.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        let peak = peak.load(Ordering::SeqCst);
        assert!((2..=3).contains(&peak), "{peak} at once");
    }
}
