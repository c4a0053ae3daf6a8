//! The incremental repack: packs kept a geometric progression git
//! verifies, rolled-up packs deleted after their grace period, cruft packs
//! left alone, `--auto` thresholds, and clones served during repacks.

use super::*;

#[test]
fn geometric_repack_leaves_a_progression_git_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, work) = pushed_repo(home, 24);
    let before = all_objects(home, &srv);
    assert_eq!(pack_counts(home, &srv).len(), 24);

    let now = ["refstore.redundantPackExpire=now"];
    let out = maintenance(&srv, &now, &[Task::IncrementalRepack]);
    assert!(out.contains("rolled"), "{out}");
    let counts = pack_counts(home, &srv);
    let sizes: Vec<u64> = counts.iter().map(|c| c.0).collect();
    assert!(
        sizes.windows(2).all(|w| w[1] >= 2 * w[0]),
        "not geometric: {sizes:?}"
    );
    assert!(counts.len() < 24);
    // The new pack comes with a reverse index: index positions in pack
    // order, as git's show-index gives them.
    let new_pack = out
        .split("into ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let pack_dir = srv.join("objects/pack");
    let rev = std::fs::read(pack_dir.join(format!("{new_pack}.rev"))).unwrap();
    assert_eq!(&rev[..12], b"RIDX\0\0\0\x01\0\0\0\x01");
    let index = std::fs::read(pack_dir.join(format!("{new_pack}.idx"))).unwrap();
    let shown = Git::new(home, home).ok_with(&["show-index"], &index);
    let mut offsets: Vec<(u64, u32)> = shown
        .lines()
        .enumerate()
        .map(|(n, line)| (line.split(' ').next().unwrap().parse().unwrap(), n as u32))
        .collect();
    offsets.sort();
    let positions: Vec<u8> = offsets.iter().flat_map(|o| o.1.to_be_bytes()).collect();
    assert_eq!(&rev[12..12 + positions.len()], &positions[..]);
    assert_eq!(rev.len(), 12 + positions.len() + 40);
    assert!(counts.iter().any(|c| c.1 == format!("{new_pack}.idx")));
    assert_git_accepts(home, &srv);
    assert_eq!(all_objects(home, &srv), before);

    // More pushes: the large pack stays, the small new ones roll up.
    let large = counts.last().unwrap().1.clone();
    for i in 0..5 {
        std::fs::write(work.join(format!("more{i}")), "x\n").unwrap();
        git_ok(home, &work, &["add", "-A"]);
        git_ok(home, &work, &["commit", "-qm", "more"]);
        git_ok(
            home,
            &work,
            &["push", "-q", srv.to_str().unwrap(), "HEAD:refs/heads/main"],
        );
    }
    let before = all_objects(home, &srv);
    maintenance(&srv, &now, &[Task::IncrementalRepack]);
    let counts = pack_counts(home, &srv);
    let sizes: Vec<u64> = counts.iter().map(|c| c.0).collect();
    assert!(sizes.windows(2).all(|w| w[1] >= 2 * w[0]), "{sizes:?}");
    assert!(
        counts.iter().any(|c| c.1 == large),
        "the large pack was rewritten"
    );
    assert_git_accepts(home, &srv);
    assert_eq!(all_objects(home, &srv), before);

    // A clone of the result is complete.
    git_ok(
        home,
        home,
        &["clone", "-q", "--bare", srv.to_str().unwrap(), "copy.git"],
    );
    git_ok(home, &home.join("copy.git"), &["fsck", "--strict"]);
}

#[test]
fn redundant_packs_stay_until_their_grace_period_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, _) = pushed_repo(home, 6);
    let old = pack_names(&srv, "pack");
    maintenance(&srv, &[], &[Task::IncrementalRepack]);
    // Their data is still there for readers that had opened them, but
    // their indexes are gone so that no reader lists them any more; the
    // cleanup task leaves them be, and everything git sees is
    // consistent.
    maintenance(&srv, &["refstore.cleanupExpire=now"], &[Task::Cleanup]);
    for name in &old {
        let pack = srv.join("objects/pack").join(name);
        assert!(pack.exists(), "{name} removed at once");
        assert!(!pack.with_extension("idx").exists(), "{name} still listed");
    }
    let list = std::fs::read_to_string(srv.join("objects/info/refstore-redundant-packs")).unwrap();
    assert_eq!(list.lines().count(), old.len(), "{list}");
    assert_git_accepts(home, &srv);
    // Once expired, the next run deletes them.
    maintenance(
        &srv,
        &["refstore.redundantPackExpire=now"],
        &[Task::IncrementalRepack],
    );
    for name in &old {
        assert!(!srv.join("objects/pack").join(name).exists(), "{name} kept");
    }
    assert!(!srv.join("objects/info/refstore-redundant-packs").exists());
    assert_git_accepts(home, &srv);
}

#[test]
fn auto_runs_tasks_over_their_thresholds_only() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, _) = pushed_repo(home, 4);
    let packs = pack_names(&srv, "pack");
    maintenance_auto(&srv, &[]);
    assert_eq!(
        pack_names(&srv, "pack"),
        packs,
        "4 packs are under the threshold"
    );
    assert!(!srv.join("objects/pack/multi-pack-index").exists());
    let out = maintenance_auto(
        &srv,
        &[
            "maintenance.incremental-repack.auto=3",
            "refstore.redundantPackExpire=now",
        ],
    );
    assert!(out.contains("incremental-repack: rolled"), "{out}");
    assert!(srv.join("objects/pack/multi-pack-index").exists());
    assert_git_accepts(home, &srv);
}

#[test]
fn clones_during_repacks_succeed() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().to_owned();
    let (srv, work) = pushed_repo(&home, 10);
    // The clones are served in this process while the repacks run in it:
    // as a server that maintains its repositories in the background does.
    let cloner = {
        let home = home.clone();
        let srv = srv.clone();
        std::thread::spawn(move || {
            for n in 0..8 {
                let dest = home.join(format!("clone{n}"));
                let o = clone_through_refstore(&home, &srv, &dest);
                assert!(o.status.success(), "clone {n}: {}", stderr(&o));
                git_ok(&home, &dest, &["fsck", "--strict"]);
            }
        })
    };
    for i in 0..4 {
        std::fs::write(work.join(format!("during{i}")), "x\n").unwrap();
        git_ok(&home, &work, &["add", "-A"]);
        git_ok(&home, &work, &["commit", "-qm", "during"]);
        git_ok(
            &home,
            &work,
            &["push", "-q", srv.to_str().unwrap(), "HEAD:refs/heads/main"],
        );
        maintenance(&srv, &[], &[]);
    }
    cloner.join().unwrap();
    assert_git_accepts(&home, &srv);

    // A pack pushed after the multi-pack-index was written is outside it;
    // refstore's readers still see it.
    std::fs::write(work.join("after"), "x\n").unwrap();
    git_ok(&home, &work, &["add", "-A"]);
    git_ok(&home, &work, &["commit", "-qm", "after"]);
    git_ok(
        &home,
        &work,
        &["push", "-q", srv.to_str().unwrap(), "HEAD:refs/heads/main"],
    );
    let tip = git_ok(&home, &work, &["rev-parse", "HEAD"]);
    let dest = home.join("after.git");
    let o = clone_through_refstore(&home, &srv, &dest);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(git_ok(&home, &dest, &["rev-parse", "main"]), tip);
    git_ok(&home, &dest, &["fsck", "--strict"]);
}

#[test]
fn cruft_packs_are_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, _) = pushed_repo(home, 3);
    let hash = ["hash-object", "-w", "--stdin"];
    let unreachable = write_object(home, &srv, &hash, "unreachable\n");
    git_ok(home, &srv, &["repack", "--cruft", "-d", "-q"]);
    let cruft = pack_names(&srv, "mtimes");
    assert_eq!(cruft.len(), 1);
    let work = home.join("work");
    for i in 0..4 {
        std::fs::write(work.join(format!("n{i}")), "n\n").unwrap();
        git_ok(home, &work, &["add", "-A"]);
        git_ok(home, &work, &["commit", "-qm", "n"]);
        git_ok(
            home,
            &work,
            &["push", "-q", srv.to_str().unwrap(), "HEAD:refs/heads/main"],
        );
    }
    let out = maintenance(
        &srv,
        &["refstore.redundantPackExpire=now"],
        &[Task::IncrementalRepack],
    );
    assert!(out.contains("rolled"), "{out}");
    assert_eq!(pack_names(&srv, "mtimes"), cruft);
    assert!(srv
        .join("objects/pack")
        .join(cruft[0].replace(".mtimes", ".pack"))
        .exists());
    git_ok(home, &srv, &["cat-file", "-e", &unreachable]);
    assert_git_accepts(home, &srv);
}
