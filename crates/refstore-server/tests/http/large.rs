//! Large objects over HTTP: a pushed file above the server's threshold
//! for holding objects whole (`refstore serve`'s 16 MiB, far below git's)
//! still takes later versions of it sent as deltas, whether the push is
//! kept as a pack or unpacked.

use crate::support::*;

#[test]
fn deltas_of_files_above_the_serving_threshold_are_still_taken() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let src = home.join("src");
    git_ok(home, home, &["init", "-q", "-b", "main", "src"]);
    // 20 MB: above serve's threshold (16 MiB), far below git's, so git
    // sends its later versions as deltas.
    let mut content = noise(1, 20 << 20);
    let mut commit = |round: u8| {
        content.extend_from_slice(&[round; 8]);
        std::fs::write(src.join("f"), &content).unwrap();
        git_ok(home, &src, &["add", "f"]);
        git_ok(home, &src, &["commit", "-q", "-m", &round.to_string()]);
    };
    commit(0);
    let root = home.join("root");
    std::fs::create_dir_all(&root).unwrap();
    for (name, limit) in [("loose.git", "100"), ("packed.git", "1")] {
        git_ok(home, &root, &["init", "-q", "--bare", name]);
        let repo = root.join(name);
        git_ok(home, &repo, &["config", "receive.unpackLimit", limit]);
        git_ok(home, &repo, &["config", "receive.fsckObjects", "true"]);
    }
    let server = Serve::new(&root).pushes("bob:pw\n").start();
    let push = |name: &str| {
        let url = server.url_as("bob", "pw", name);
        let out = git_net(home, &src, &["push", "-q", &url, "main"]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
    };
    // The first version whole; then two more: one a delta against the
    // server's copy (a thin pack), the other against the first in the
    // same pack.
    push("loose.git");
    push("packed.git");
    commit(1);
    commit(2);
    git_ok(home, &src, &["repack", "-adq", "--depth=50"]);
    push("loose.git");
    push("packed.git");
    let head = git_ok(home, &src, &["rev-parse", "HEAD"]);
    for name in ["loose.git", "packed.git"] {
        let repo = root.join(name);
        assert_eq!(git_ok(home, &repo, &["rev-parse", "main"]), head, "{name}");
        git_ok(home, &repo, &["fsck", "--no-dangling", "--strict"]);
        let left: Vec<_> = std::fs::read_dir(repo.join("objects"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("tmp_"))
            .collect();
        assert!(left.is_empty(), "{name}: {left:?}");
    }
}
