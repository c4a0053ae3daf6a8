//! Limits per client address, so one client cannot take the whole server:
//! `--max-connections-per-ip` open connections, and a share of the
//! service workers, per address. IPv6 clients are grouped by /64, the
//! smallest block a site is usually given, so an attacker with one
//! network cannot pose as millions of clients.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The key a client address is counted under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddressKey(u128);

impl AddressKey {
    /// IPv4 addresses (and IPv4-mapped IPv6 ones) count alone; IPv6
    /// addresses by their /64 prefix.
    pub fn of(address: IpAddr) -> AddressKey {
        match address {
            IpAddr::V4(v4) => AddressKey(u128::from(u32::from(v4))),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => AddressKey(u128::from(u32::from(v4))),
                None => AddressKey((u128::from(v6) >> 64) << 64 | 1 << 32),
            },
        }
    }
}

/// Counts what each address holds, up to a limit per address.
#[derive(Debug)]
pub struct PerAddress {
    limit: usize,
    held: Mutex<HashMap<AddressKey, usize>>,
}

impl PerAddress {
    /// At most `limit` (at least 1) per address.
    pub fn new(limit: usize) -> Arc<PerAddress> {
        Arc::new(PerAddress {
            limit: limit.max(1),
            held: Mutex::new(HashMap::new()),
        })
    }

    /// Takes one for `address`, or `None` if it holds its limit already.
    /// The count goes back when the guard is dropped.
    pub fn try_take(self: &Arc<Self>, address: IpAddr) -> Option<AddressGuard> {
        let key = AddressKey::of(address);
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let count = held.entry(key).or_insert(0);
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(AddressGuard {
            owner: self.clone(),
            key,
        })
    }

    /// What `address` holds now.
    pub fn held(&self, address: IpAddr) -> usize {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.get(&AddressKey::of(address)).copied().unwrap_or(0)
    }
}

/// One connection (or service slot) an address holds.
#[derive(Debug)]
pub struct AddressGuard {
    owner: Arc<PerAddress>,
    key: AddressKey,
}

impl Drop for AddressGuard {
    fn drop(&mut self) {
        let mut held = self.owner.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = held.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                // Addresses come and go; the map holds only current ones.
                held.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_holds_at_most_its_limit_and_gets_it_back() {
        let limits = PerAddress::new(2);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let first = limits.try_take(a).unwrap();
        let _second = limits.try_take(a).unwrap();
        assert!(limits.try_take(a).is_none());
        assert!(limits.try_take(b).is_some());
        drop(first);
        assert_eq!(limits.held(a), 1);
        assert!(limits.try_take(a).is_some());
    }

    #[test]
    fn ipv6_counts_by_slash_64_and_mapped_ipv4_as_ipv4() {
        let key = |s: &str| AddressKey::of(s.parse().unwrap());
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::7"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:10.0.0.1"), key("10.0.0.1"));
        assert_ne!(key("10.0.0.1"), key("10.0.0.2"));
        // An IPv6 /64 never collides with an IPv4 address.
        assert_ne!(key("::"), key("0.0.0.0"));
    }
}
