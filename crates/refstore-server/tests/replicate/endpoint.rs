//! The internal replication endpoint: it opens only to the shared secret,
//! reaches only repositories below the served root, stores a verified
//! pack once and refuses a corrupt or truncated one with nothing stored;
//! a server that does not replicate has no such endpoint.

use crate::support::*;
use crate::{commit, packs, Cluster, Repair, SECRET};
use std::path::Path;

/// An HTTP/1.0 request with a bearer token (if any) and a body.
fn request(
    node: &Served,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &[u8],
) -> (u16, String) {
    let mut head = format!("{method} {path} HTTP/1.0\r\nHost: x\r\n");
    if let Some(token) = token {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    node.exchange(&bytes)
}

fn token() -> String {
    SECRET.bytes().map(|b| format!("{b:02x}")).collect()
}

/// A complete pack of every object of `work`.
fn pack_of(home: &Path, work: &Path) -> Vec<u8> {
    let objects = git_ok(home, work, &["rev-list", "--objects", "--all"]);
    let ids: String = objects.lines().map(|l| format!("{}\n", &l[..40])).collect();
    Git::new(home, work).ok_bytes(&["pack-objects", "--stdout"], ids.as_bytes())
}

#[test]
fn the_endpoint_needs_the_secret_and_stays_below_the_root() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let cluster = Cluster::new(home, 2, 1);
    let n1 = cluster.start(1, Repair::Off);
    let list = "/_refstore/replicate/r.git/packs";

    let (status, _) = request(&n1, "GET", list, None, b"");
    assert_eq!(status, 401);
    let (status, _) = request(&n1, "GET", list, Some("00"), b"");
    assert_eq!(status, 403);
    let (status, _) = request(
        &n1,
        "POST",
        "/_refstore/replicate/r.git/pack",
        Some("7365"),
        b"PACK",
    );
    assert_eq!(status, 403);
    let (status, answer) = request(&n1, "GET", list, Some(&token()), b"");
    assert_eq!(status, 200, "{answer}");

    // Paths that leave the root, through `..` or a symbolic link, are
    // not repositories.
    std::os::unix::fs::symlink(cluster.repo(2), cluster.root(1).join("outside.git")).unwrap();
    for hostile in [
        "/_refstore/replicate/../n2/r.git/packs",
        "/_refstore/replicate/%2e%2e/n2/r.git/packs",
        "/_refstore/replicate/outside.git/packs",
        "/_refstore/replicate/r.git/pack/..%2f..%2fconfig.pack",
        "/_refstore/replicate/r.git/pack/pack-x.keep",
    ] {
        let (status, answer) = request(&n1, "GET", hostile, Some(&token()), b"");
        assert_eq!(status, 404, "{hostile}: {answer}");
    }

    // A pack is stored once, idempotently; a corrupt or truncated one is
    // refused with nothing stored.
    let work = home.join("work");
    commit(home, &work, "a");
    let pack = pack_of(home, &work);
    let upload = "/_refstore/replicate/r.git/pack";
    let mut corrupt = pack.clone();
    let middle = corrupt.len() / 2;
    corrupt[middle] ^= 0xff;
    for bad in [&corrupt[..], &pack[..pack.len() - 7], b"not a pack"] {
        let (status, answer) = request(&n1, "POST", upload, Some(&token()), bad);
        assert_eq!(status, 400, "{answer}");
        assert!(packs(&cluster.repo(1)).is_empty());
    }
    let (status, first) = request(&n1, "POST", upload, Some(&token()), &pack);
    assert_eq!(status, 200, "{first}");
    let (status, again) = request(&n1, "POST", upload, Some(&token()), &pack);
    assert_eq!(status, 200, "{again}");
    let stored = packs(&cluster.repo(1));
    assert_eq!(stored.len(), 1);
    assert!(first.ends_with(&format!("{}\n", stored[0])), "{first}");
    let idx = cluster
        .repo(1)
        .join(format!("objects/pack/{}.idx", stored[0]));
    git_ok(home, home, &["verify-pack", idx.to_str().unwrap()]);
    let (_, listed) = request(&n1, "GET", list, Some(&token()), b"");
    assert!(
        listed.contains(&format!("{} {}\n", stored[0], pack.len())),
        "{listed}"
    );
    let (status, served) = request(
        &n1,
        "GET",
        &format!("/_refstore/replicate/r.git/pack/{}.pack", stored[0]),
        Some(&token()),
        b"",
    );
    assert_eq!(status, 200);
    assert!(served.len() > pack.len());
    n1.stop();

    // A server that does not replicate has no such endpoint.
    let plain = Serve::new(&cluster.root(1)).start();
    let (status, _) = request(&plain, "GET", list, Some(&token()), b"");
    assert_eq!(status, 404);
}
