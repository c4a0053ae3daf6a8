//! How nodes authenticate to each other's replication endpoint: the
//! shared secret as a bearer token (`Authorization: Bearer <hex>`),
//! compared in constant time.
//!
//! A bearer token rather than an HMAC of each request: a request can be
//! judged from its head, before any of its body is read, so a client
//! without the secret cannot make a node read (or hold) a pack; and what
//! an HMAC's timestamp would add, protection against a replayed request,
//! buys nothing here: replaying an upload stores the same verified pack
//! again (packs are named by their content and stored idempotently), and
//! replaying a download discloses nothing the captured answer did not.
//! Either way whoever can watch the nodes' traffic reads the objects, so
//! the nodes' network must be private (or carried over a tunnel); the
//! secret only keeps clients that cannot watch it out.
//!
//! Both sides are hashed before they are compared, so the comparison
//! takes the same time whatever the presented token's length and content.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The request header that carries the token.
pub const HEADER: &str = "Authorization";

/// The header's value for `secret`.
pub fn header_value(secret: &[u8]) -> String {
    let mut value = String::with_capacity(7 + 2 * secret.len());
    value.push_str("Bearer ");
    for byte in secret {
        value.push_str(&format!("{byte:02x}"));
    }
    value
}

/// What a request's authorization header says about its sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It holds the secret.
    Authorized,
    /// No token (answered 401).
    Missing,
    /// A token that is not the secret (answered 403).
    Wrong,
}

/// Judges the `Authorization` header of a request (`None`: absent).
pub fn check(secret: &[u8], header: Option<&str>) -> Verdict {
    let Some(token) = header.and_then(|h| h.strip_prefix("Bearer ")) else {
        return Verdict::Missing;
    };
    let expected = Sha256::digest(header_value(secret).as_bytes());
    let presented = Sha256::digest(format!("Bearer {}", token.trim()).as_bytes());
    // An empty secret opens nothing.
    if !secret.is_empty() && bool::from(expected.as_slice().ct_eq(presented.as_slice())) {
        Verdict::Authorized
    } else {
        Verdict::Wrong
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_secret_opens() {
        let secret = b"s3cret\n";
        let good = header_value(secret);
        assert_eq!(good, "Bearer 7333637265740a");
        assert_eq!(check(secret, Some(&good)), Verdict::Authorized);
        assert_eq!(check(secret, None), Verdict::Missing);
        assert_eq!(check(secret, Some("Basic dTpw")), Verdict::Missing);
        assert_eq!(check(secret, Some("Bearer 7333637265740b")), Verdict::Wrong);
        assert_eq!(check(secret, Some("Bearer ")), Verdict::Wrong);
        assert_eq!(check(b"", Some("Bearer ")), Verdict::Wrong);
    }
}
