//! A repository that takes many pushes is kept in shape: after pushes the
//! server runs `maintenance run --auto` in the background, so the packs
//! the pushes leave are rolled up into a geometric set under a
//! multi-pack-index that git verifies.

use crate::support::*;
use crate::{served_for_pushes, take_maintenance_lock};
use std::time::{Duration, Instant};

fn index_count(repo: &std::path::Path) -> usize {
    std::fs::read_dir(repo.join("objects/pack"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".idx")
        })
        .count()
}

#[test]
fn pushes_are_followed_by_background_maintenance() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (server, url) = served_for_pushes(
        home,
        &[
            ["maintenance.incremental-repack.auto", "4"],
            ["refstore.redundantPackExpire", "now"],
            // Every push stored as a pack (below the default limit of 100
            // objects a push is stored loose), so packs pile up.
            ["receive.unpackLimit", "1"],
        ],
    );
    let work = home.join("work");
    let served = home.join("root/proj.git");
    let pushes = 24;
    for i in 0..pushes {
        std::fs::write(work.join(format!("f{i}")), format!("{i}\n")).unwrap();
        git_ok(home, &work, &["add", "-A"]);
        git_ok(home, &work, &["commit", "-qm", &format!("c{i}")]);
        let o = git_net(home, &work, &["push", "-q", &url, "HEAD:refs/heads/main"]);
        assert!(o.status.success(), "push {i}: {}", stderr(&o));
    }
    // Maintenance runs after the pushes were answered; wait for it to
    // have caught up (the deadline only bounds a hang, it measures
    // nothing).
    let deadline = Instant::now() + Duration::from_secs(300);
    while !(served.join("objects/pack/multi-pack-index").exists()
        && index_count(&served) < 10
        && !served.join("objects/maintenance.lock").exists())
    {
        assert!(
            Instant::now() < deadline,
            "no maintenance after {pushes} pushes: {} packs",
            index_count(&served)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // No run under way or starting while git checks the repository.
    let lock = take_maintenance_lock(&served);
    server.stop();
    git_ok(home, &served, &["fsck", "--strict"]);
    git_ok(home, &served, &["multi-pack-index", "verify"]);
    let log = git_ok(home, &served, &["rev-list", "--count", "main"]);
    assert_eq!(log.trim(), pushes.to_string());
    std::fs::remove_file(lock).unwrap();
}
