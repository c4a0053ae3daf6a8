//! `refstore maintenance run`, checked with git: after many small pushes a
//! geometric repack leaves packs git verifies, a multi-pack-index and a
//! commit-graph git verifies, every object still readable; cleanup
//! removes what crashes leave and nothing a live process uses.

mod support;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};
use support::*;

/// A bare repository `srv.git` that received `pushes` pushes, each kept
/// as its own pack (`receive.unpackLimit=1`), each changing a large file
/// so that packs hold deltas (thin packs completed on receipt).
fn pushed_repo(home: &Path, pushes: usize) -> (PathBuf, PathBuf) {
    let srv = home.join("srv.git");
    let work = home.join("work");
    git_ok(home, home, &["init", "-q", "--bare", "srv.git"]);
    git_ok(home, &srv, &["config", "receive.unpackLimit", "1"]);
    git_ok(home, home, &["init", "-q", "work"]);
    let mut big: Vec<String> = (0..3000).map(|n| format!("line {n}")).collect();
    for i in 0..pushes {
        let at = (i * 37) % big.len();
        big[at] = format!("changed {i}");
        std::fs::write(work.join("big"), big.join("\n")).unwrap();
        std::fs::write(work.join(format!("f{i}")), format!("{i}\n")).unwrap();
        git_ok(home, &work, &["add", "-A"]);
        git_ok(home, &work, &["commit", "-qm", &format!("c{i}")]);
        if i % 7 == 3 {
            // A merge, so the commit-graph holds second parents.
            git_ok(
                home,
                &work,
                &["checkout", "-qb", &format!("side{i}"), "HEAD~1"],
            );
            std::fs::write(work.join(format!("s{i}")), "side\n").unwrap();
            git_ok(home, &work, &["add", "-A"]);
            git_ok(home, &work, &["commit", "-qm", "side"]);
            git_ok(home, &work, &["checkout", "-q", "-"]);
            git_ok(
                home,
                &work,
                &["merge", "-q", "--no-edit", &format!("side{i}")],
            );
        }
        git_ok(
            home,
            &work,
            &["push", "-q", srv.to_str().unwrap(), "HEAD:refs/heads/main"],
        );
    }
    (srv, work)
}

fn maintenance(home: &Path, repo: &Path, config: &[&str], args: &[&str]) -> String {
    let mut all: Vec<&str> = Vec::new();
    for c in config {
        all.extend(["-c", c]);
    }
    all.extend(["maintenance", "run"]);
    all.extend(args);
    let o = refstore(home, repo, &all);
    assert!(o.status.success(), "maintenance {args:?}: {}", stderr(&o));
    stderr(&o)
}

/// Object counts of the visible packs, sorted.
fn pack_counts(home: &Path, repo: &Path) -> Vec<(u64, String)> {
    let mut counts = Vec::new();
    for name in pack_names(repo, "idx") {
        let index = repo.join("objects/pack").join(&name);
        let o = isolate(&mut Command::new("git"), home)
            .arg("show-index")
            .stdin(std::fs::File::open(&index).unwrap())
            .current_dir(repo)
            .output()
            .unwrap();
        assert!(o.status.success());
        counts.push((stdout(&o).lines().count() as u64, name));
    }
    counts.sort();
    counts
}

fn pack_names(repo: &Path, ext: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(&format!(".{ext}")))
        .collect();
    names.sort();
    names
}

/// Every object with its type and size, and all their contents.
fn all_objects(home: &Path, repo: &Path) -> (String, usize) {
    let list = git_ok(
        home,
        repo,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check",
            "--unordered",
        ],
    );
    let mut lines: Vec<&str> = list.lines().collect();
    lines.sort();
    let contents = isolate(&mut Command::new("git"), home)
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(contents.status.success(), "{}", stderr(&contents));
    (lines.join("\n"), contents.stdout.len())
}

fn assert_git_accepts(home: &Path, repo: &Path) {
    git_ok(home, repo, &["fsck", "--strict", "--no-dangling"]);
    git_ok(home, repo, &["multi-pack-index", "verify"]);
    for name in pack_names(repo, "idx") {
        let path = repo.join("objects/pack").join(name);
        git_ok(home, repo, &["verify-pack", path.to_str().unwrap()]);
    }
    // Git counts as garbage only the files of rolled-up packs waiting to
    // expire, which housekeeping hid by removing their index.
    let waiting = std::fs::read_to_string(repo.join("objects/info/refstore-redundant-packs"))
        .unwrap_or_default();
    let waiting: Vec<&str> = waiting
        .lines()
        .filter_map(|l| l.split(' ').next())
        .collect();
    let hidden_files = std::fs::read_dir(repo.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| {
            let stem = name.split('.').next().unwrap_or_default();
            waiting.contains(&stem) && !name.ends_with(".idx")
        })
        .count();
    let counted = git_ok(home, repo, &["count-objects", "-v"]);
    assert!(
        counted
            .lines()
            .any(|l| l == format!("garbage: {hidden_files}")),
        "{counted}"
    );
}

#[test]
fn geometric_repack_leaves_a_progression_git_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, work) = pushed_repo(home, 24);
    let before = all_objects(home, &srv);
    assert_eq!(pack_counts(home, &srv).len(), 24);

    let now = ["refstore.redundantPackExpire=now"];
    let out = maintenance(home, &srv, &now, &["--task=incremental-repack"]);
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
    let index = std::fs::File::open(pack_dir.join(format!("{new_pack}.idx"))).unwrap();
    let shown = isolate(&mut Command::new("git"), home)
        .arg("show-index")
        .stdin(index)
        .output()
        .unwrap();
    let mut offsets: Vec<(u64, u32)> = stdout(&shown)
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
    maintenance(home, &srv, &now, &["--task=incremental-repack"]);
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
    maintenance(home, &srv, &[], &["--task=incremental-repack"]);
    // Their data is still there for readers that had opened them, but
    // their indexes are gone so that no reader lists them any more; the
    // cleanup task leaves them be, and everything git sees is
    // consistent.
    maintenance(
        home,
        &srv,
        &["refstore.cleanupExpire=now"],
        &["--task=cleanup"],
    );
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
        home,
        &srv,
        &["refstore.redundantPackExpire=now"],
        &["--task=incremental-repack"],
    );
    for name in &old {
        assert!(!srv.join("objects/pack").join(name).exists(), "{name} kept");
    }
    assert!(!srv.join("objects/info/refstore-redundant-packs").exists());
    assert_git_accepts(home, &srv);
}

/// The layers of the commit-graph chain, bottom first.
fn chain(repo: &Path) -> Vec<String> {
    let path = repo.join("objects/info/commit-graphs/commit-graph-chain");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// git reads the commit-graph as it reads the commits themselves.
fn assert_graph_agrees(home: &Path, srv: &Path) {
    git_ok(home, srv, &["commit-graph", "verify"]);
    let log = |graph: &str| {
        git_ok(
            home,
            srv,
            &[
                "-c",
                &format!("core.commitGraph={graph}"),
                "log",
                "--format=%H %P %ct",
                "--topo-order",
                "--all",
            ],
        )
    };
    assert_eq!(log("true"), log("false"));
}

fn push_commits(home: &Path, work: &Path, srv: &Path, n: usize) {
    for i in 0..n {
        // Appended: every commit changes the file.
        let mut grown = std::fs::read_to_string(work.join("grow")).unwrap_or_default();
        grown.push_str(&format!("{i}\n"));
        std::fs::write(work.join("grow"), grown).unwrap();
        git_ok(home, work, &["add", "-A"]);
        git_ok(home, work, &["commit", "-qm", &format!("grow {i}")]);
    }
    git_ok(
        home,
        work,
        &["push", "-q", srv.to_str().unwrap(), "HEAD:refs/heads/main"],
    );
}

#[test]
fn commit_graph_chain_is_extended_and_merged_as_git_does() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, work) = pushed_repo(home, 12);
    // An octopus merge needs the EDGE chunk.
    let branch = git_ok(home, &work, &["symbolic-ref", "--short", "HEAD"]);
    let branch = branch.trim();
    let base = git_ok(home, &work, &["rev-parse", "HEAD~2"]);
    for b in ["o1", "o2", "o3"] {
        git_ok(home, &work, &["checkout", "-qb", b, base.trim()]);
        std::fs::write(work.join(b), b).unwrap();
        git_ok(home, &work, &["add", "-A"]);
        git_ok(home, &work, &["commit", "-qm", b]);
    }
    git_ok(home, &work, &["checkout", "-q", branch]);
    git_ok(home, &work, &["merge", "-q", "--no-edit", "o1", "o2", "o3"]);
    git_ok(
        home,
        &work,
        &["push", "-q", srv.to_str().unwrap(), "HEAD:refs/heads/main"],
    );
    // A single file, as `git commit-graph write` leaves it, gives way to
    // the chain.
    git_ok(home, &srv, &["commit-graph", "write", "--reachable"]);
    let out = maintenance(home, &srv, &[], &["--task=commit-graph"]);
    assert!(out.contains("a layer of"), "{out}");
    assert!(!srv.join("objects/info/commit-graph").exists());
    assert_eq!(chain(&srv).len(), 1);
    assert_graph_agrees(home, &srv);
    let layer = srv
        .join("objects/info/commit-graphs")
        .join(format!("graph-{}.graph", chain(&srv)[0]));
    let bytes = std::fs::read(&layer).unwrap();
    assert!(bytes.windows(4).any(|w| w == b"GDA2"), "no generation data");

    // Small additions stack up as layers.
    push_commits(home, &work, &srv, 3);
    maintenance(home, &srv, &[], &["--task=commit-graph"]);
    assert_eq!(chain(&srv).len(), 2);
    assert_graph_agrees(home, &srv);
    push_commits(home, &work, &srv, 1);
    maintenance(home, &srv, &[], &["--task=commit-graph"]);
    assert_eq!(chain(&srv).len(), 3);
    assert_graph_agrees(home, &srv);
    // Nothing new: the chain stays as it is.
    let before = chain(&srv);
    maintenance(home, &srv, &[], &["--task=commit-graph"]);
    assert_eq!(chain(&srv), before);

    // A larger addition takes the small layers above it in: 4 new
    // commits merge with the layers of 1 and 3 (each at most twice what
    // is merged so far), not with the base of 20.
    push_commits(home, &work, &srv, 4);
    let out = maintenance(
        home,
        &srv,
        &["refstore.redundantPackExpire=now"],
        &["--task=commit-graph"],
    );
    assert!(out.contains("(2 merged into it)"), "{out}");
    let after = chain(&srv);
    assert_eq!(after.len(), 2);
    assert_eq!(after[0], before[0]);
    assert_graph_agrees(home, &srv);
    // The merged layers' files are gone (their expiry is now).
    let files = std::fs::read_dir(srv.join("objects/info/commit-graphs"))
        .unwrap()
        .count();
    assert_eq!(files, 3, "the chain file and two layers");

    // git extends refstore's chain, and refstore git's.
    push_commits(home, &work, &srv, 1);
    git_ok(
        home,
        &srv,
        &["commit-graph", "write", "--split", "--reachable"],
    );
    assert_eq!(chain(&srv).len(), 3);
    assert_graph_agrees(home, &srv);
    push_commits(home, &work, &srv, 1);
    maintenance(home, &srv, &[], &["--task=commit-graph"]);
    assert_eq!(chain(&srv)[..2], after[..]);
    assert_graph_agrees(home, &srv);

    // refstore's upload-pack reads the chain: a clone through it is
    // complete.
    let clone = home.join("clone.git");
    let o = clone_through_refstore(home, &srv, &clone);
    assert!(o.status.success(), "clone: {}", stderr(&o));
    git_ok(home, &clone, &["fsck", "--no-dangling"]);
}

#[test]
fn loose_objects_are_packed_and_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, _) = pushed_repo(home, 2);
    for i in 0..30 {
        let o = isolate(&mut Command::new("git"), home)
            .args(["hash-object", "-w", "--stdin"])
            .current_dir(&srv)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        let mut o = o;
        o.stdin
            .take()
            .unwrap()
            .write_all(format!("loose {i}\n").as_bytes())
            .unwrap();
        assert!(o.wait_with_output().unwrap().status.success());
    }
    let before = all_objects(home, &srv);
    let counted = git_ok(home, &srv, &["count-objects", "-v"]);
    assert!(counted.starts_with("count: 30\n"), "{counted}");
    maintenance(
        home,
        &srv,
        &[],
        &["--task=loose-objects", "--task=incremental-repack"],
    );
    let counted = git_ok(home, &srv, &["count-objects", "-v"]);
    assert!(counted.starts_with("count: 0\n"), "{counted}");
    assert_eq!(all_objects(home, &srv), before);
    assert_git_accepts(home, &srv);
}

#[test]
fn loose_versions_of_files_are_packed_as_deltas() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    git_ok(home, home, &["init", "-q", "--bare", "srv.git"]);
    git_ok(home, home, &["init", "-q", "work"]);
    let srv = home.join("srv.git");
    let work = home.join("work");
    // Small pushes, stored loose (receive.unpackLimit): two files growing
    // by a line a commit, as source files do.
    let mut lines: Vec<String> = (0..100).map(|n| format!("line {n} of the file")).collect();
    // Files that do not change make the root trees worth a delta.
    for n in 0..10 {
        std::fs::write(work.join(format!("static{n}")), format!("{n}\n")).unwrap();
    }
    for i in 0..20 {
        lines.push(format!("added by commit {i}"));
        std::fs::write(work.join("a.txt"), lines.join("\n")).unwrap();
        std::fs::write(work.join("b.txt"), lines.join("\n").to_uppercase()).unwrap();
        git_ok(home, &work, &["add", "-A"]);
        git_ok(home, &work, &["commit", "-qm", &format!("c{i}")]);
        git_ok(
            home,
            &work,
            &["push", "-q", srv.to_str().unwrap(), "HEAD:refs/heads/main"],
        );
    }
    let counted = git_ok(home, &srv, &["count-objects", "-v"]);
    assert!(counted.starts_with("count: 90\n"), "{counted}");
    let before = all_objects(home, &srv);
    maintenance(home, &srv, &[], &["--task=loose-objects"]);
    let index = srv.join("objects/pack").join(&pack_names(&srv, "idx")[0]);
    let verified = git_ok(home, &srv, &["verify-pack", "-v", index.to_str().unwrap()]);
    // `<id> <type> <size> <size in pack> <offset> <depth> <base>` for deltas.
    let deltas: Vec<&str> = verified
        .lines()
        .filter(|l| l.split_whitespace().count() == 7)
        .collect();
    let blob_deltas = deltas.iter().filter(|l| l.contains(" blob ")).count();
    let tree_deltas = deltas.iter().filter(|l| l.contains(" tree ")).count();
    assert!(blob_deltas >= 36, "{verified}");
    assert!(tree_deltas >= 15, "{verified}");
    let pack = std::fs::metadata(index.with_extension("pack"))
        .unwrap()
        .len();
    assert!(pack < 12_000, "pack of {pack} bytes: {verified}");
    assert_eq!(all_objects(home, &srv), before);
    git_ok(home, &srv, &["fsck", "--strict", "--no-dangling"]);
}

fn age(path: &Path, by: Duration) {
    let file = std::fs::File::open(path).unwrap();
    file.set_modified(SystemTime::now() - by).unwrap();
}

#[test]
fn cleanup_removes_crash_leftovers_and_nothing_live() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, _) = pushed_repo(home, 3);
    let pack_dir = srv.join("objects/pack");
    let hour = Duration::from_secs(2 * 3600);
    let packs = pack_names(&srv, "pack");
    let a_pack = packs[0].replace(".pack", "");
    let live_keep = pack_dir.join(packs[1].replace(".pack", ".keep"));
    let write = |path: &Path, content: &str, old: bool| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
        if old {
            age(path, hour);
        }
    };
    // Left by crashed processes.
    for name in ["tmp_pack_Ab12", "tmp_idx_Ab12", "tmp_rev_Ab12"] {
        write(&pack_dir.join(name), "partial", true);
    }
    write(&srv.join("objects/ab/tmp_obj_x1"), "partial", true);
    let quarantine = srv.join("objects/tmp_objdir-incoming-q1");
    write(&quarantine.join("pack/tmp_pack_q"), "partial", true);
    age(&quarantine.join("pack"), hour);
    age(&quarantine, hour);
    write(
        &pack_dir.join(format!("{a_pack}.keep")),
        "receive-pack 2147483000 on refstore\n",
        false,
    );
    write(
        &pack_dir.join("pack-1111111111111111111111111111111111111111.keep"),
        "receive-pack 2147483001 on refstore\n",
        false,
    );
    write(
        &pack_dir.join("pack-2222222222222222222222222222222222222222.pack"),
        "PACK",
        true,
    );
    write(&srv.join("refs/heads/main.lock"), "0000\n", true);
    write(&srv.join("packed-refs.lock"), "", true);
    // In use: fresh temporary files, a live receive-pack's .keep, a fresh
    // lock, a fresh quarantine.
    write(&pack_dir.join("tmp_pack_fresh"), "writing", false);
    write(
        &live_keep,
        &format!("receive-pack {} on refstore\n", std::process::id()),
        false,
    );
    write(&srv.join("refs/heads/fresh.lock"), "0000\n", false);
    write(
        &srv.join("objects/tmp_objdir-incoming-q2/pack/tmp_pack_x"),
        "x",
        false,
    );

    let counted = git_ok(home, &srv, &["count-objects", "-v"]);
    assert!(!counted.lines().any(|l| l == "garbage: 0"), "{counted}");
    let out = maintenance(home, &srv, &[], &["--task=cleanup"]);
    assert!(out.contains("removed 4 temporary files, 1 quarantine directories, 2 .keep files, 1 pack files without index, 2 stale locks"), "{out}");

    for gone in [
        pack_dir.join("tmp_pack_Ab12"),
        pack_dir.join("tmp_idx_Ab12"),
        pack_dir.join("tmp_rev_Ab12"),
        srv.join("objects/ab/tmp_obj_x1"),
        quarantine.clone(),
        pack_dir.join(format!("{a_pack}.keep")),
        pack_dir.join("pack-1111111111111111111111111111111111111111.keep"),
        pack_dir.join("pack-2222222222222222222222222222222222222222.pack"),
        srv.join("refs/heads/main.lock"),
        srv.join("packed-refs.lock"),
    ] {
        assert!(!gone.exists(), "{} left", gone.display());
    }
    for kept in [
        pack_dir.join("tmp_pack_fresh"),
        live_keep.clone(),
        srv.join("refs/heads/fresh.lock"),
        srv.join("objects/tmp_objdir-incoming-q2"),
    ] {
        assert!(kept.exists(), "{} removed", kept.display());
    }
    // Nothing else was touched: the pack the dead .keep protected is
    // still there, and git finds the repository sound.
    assert!(pack_dir.join(format!("{a_pack}.pack")).exists());
    git_ok(home, &srv, &["fsck", "--strict", "--no-dangling"]);
    std::fs::remove_file(pack_dir.join("tmp_pack_fresh")).unwrap();
    let counted = git_ok(home, &srv, &["count-objects", "-v"]);
    assert!(counted.lines().any(|l| l == "garbage: 0"), "{counted}");
}

#[test]
fn an_old_lock_with_a_live_refstore_holder_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, _) = pushed_repo(home, 1);
    let lock = srv.join("refs/heads/main.lock");
    std::fs::write(&lock, "0000\n").unwrap();
    age(&lock, Duration::from_secs(3600));
    // A live refstore writer elsewhere: another process (this test) holds
    // a read lock on the repository's holder file.
    let holders = srv.join("refstore-lock-holders/holders");
    std::fs::create_dir_all(holders.parent().unwrap()).unwrap();
    std::fs::write(&holders, "").unwrap();
    let vfs = refstore_fs::real::RealFs::new();
    let mut holder = refstore_fs::Vfs::open_existing(&vfs, &holders).unwrap();
    assert!(holder.record_lock(refstore_fs::RecordLock::Read).unwrap());
    maintenance(home, &srv, &[], &["--task=cleanup"]);
    assert!(lock.exists(), "a lock with a live holder was removed");
    drop(holder);
    maintenance(home, &srv, &[], &["--task=cleanup"]);
    assert!(!lock.exists(), "a stale lock was kept");
}

#[test]
fn git_maintenance_lock_and_gc_pid_are_respected() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, _) = pushed_repo(home, 4);
    let packs = pack_names(&srv, "pack");
    let lock = srv.join("objects/maintenance.lock");
    // git's lock is empty: held by a git maintenance, however old.
    std::fs::write(&lock, "").unwrap();
    let out = maintenance(home, &srv, &[], &[]);
    assert!(out.contains("skipping maintenance"), "{out}");
    assert_eq!(pack_names(&srv, "pack"), packs);
    std::fs::remove_file(&lock).unwrap();

    // A gc running on this host (this test process stands for it).
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    std::fs::write(
        srv.join("gc.pid"),
        format!("{} {}", std::process::id(), host.trim()),
    )
    .unwrap();
    let out = maintenance(home, &srv, &[], &[]);
    assert!(out.contains("gc is already running"), "{out}");
    assert_eq!(pack_names(&srv, "pack"), packs);
    std::fs::remove_file(srv.join("gc.pid")).unwrap();

    // git's maintenance skips while a live refstore holds the lock.
    std::fs::write(
        &lock,
        format!(
            "refstore maintenance {} on {}\n",
            std::process::id(),
            host.trim()
        ),
    )
    .unwrap();
    // (It says so only on a terminal; its gc would have repacked.)
    git_ok(home, &srv, &["maintenance", "run", "--task=gc"]);
    assert_eq!(pack_names(&srv, "pack"), packs);
    let out = maintenance(home, &srv, &[], &[]);
    assert!(out.contains("skipping maintenance"), "{out}");

    // A lock left by a refstore that is gone is taken over.
    std::fs::write(
        &lock,
        format!("refstore maintenance 2147483000 on {}\n", host.trim()),
    )
    .unwrap();
    maintenance(home, &srv, &["refstore.redundantPackExpire=now"], &[]);
    assert_ne!(pack_names(&srv, "pack"), packs);
    assert!(!lock.exists() && !srv.join("gc.pid").exists());
    // git's own gc runs afterwards and agrees with the result.
    git_ok(home, &srv, &["commit-graph", "verify"]);
    assert_git_accepts(home, &srv);
    git_ok(home, &srv, &["gc", "-q"]);
    git_ok(home, &srv, &["fsck", "--strict"]);
}

#[test]
fn auto_runs_tasks_over_their_thresholds_only() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, _) = pushed_repo(home, 4);
    let packs = pack_names(&srv, "pack");
    maintenance(home, &srv, &[], &["--auto"]);
    assert_eq!(
        pack_names(&srv, "pack"),
        packs,
        "4 packs are under the threshold"
    );
    assert!(!srv.join("objects/pack/multi-pack-index").exists());
    let out = maintenance(
        home,
        &srv,
        &[
            "maintenance.incremental-repack.auto=3",
            "refstore.redundantPackExpire=now",
        ],
        &["--auto"],
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
    let refstore_bin = env!("CARGO_BIN_EXE_refstore");
    let cloner = {
        let home = home.clone();
        let srv = srv.clone();
        std::thread::spawn(move || {
            for n in 0..8 {
                let dest = home.join(format!("clone{n}"));
                let o = isolate(&mut Command::new("git"), &home)
                    .args(["clone", "-q", "--bare", "--no-local"])
                    .arg(format!("--upload-pack={refstore_bin} upload-pack"))
                    .arg(format!("file://{}", srv.display()))
                    .arg(&dest)
                    .output()
                    .unwrap();
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
        maintenance(&home, &srv, &[], &[]);
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
    let o = isolate(&mut Command::new("git"), &home)
        .args(["clone", "-q", "--bare", "--no-local"])
        .arg(format!("--upload-pack={refstore_bin} upload-pack"))
        .arg(format!("file://{}", srv.display()))
        .arg(&dest)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(git_ok(&home, &dest, &["rev-parse", "main"]), tip);
    git_ok(&home, &dest, &["fsck", "--strict"]);
}

fn write_object(home: &Path, repo: &Path, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = isolate(&mut Command::new("git"), home)
        .args(args)
        .current_dir(repo)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    stdout(&o).trim().to_owned()
}

fn loose_path(repo: &Path, id: &str) -> PathBuf {
    repo.join("objects").join(&id[..2]).join(&id[2..])
}

#[test]
fn old_unreachable_loose_objects_are_pruned_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, _) = pushed_repo(home, 2);
    let three_weeks = Duration::from_secs(21 * 86_400);
    let hash = ["hash-object", "-w", "--stdin"];
    // Old but reachable: a blob in a tree in a commit a ref points to.
    let blob = write_object(home, &srv, &hash, "reachable\n");
    let tree = write_object(
        home,
        &srv,
        &["mktree"],
        &format!("100644 blob {blob}\tfile\n"),
    );
    let commit = write_object(home, &srv, &["commit-tree", &tree, "-m", "extra"], "");
    git_ok(home, &srv, &["update-ref", "refs/heads/extra", &commit]);
    // Old and unreachable; fresh and unreachable.
    let garbage = write_object(home, &srv, &hash, "garbage\n");
    let fresh = write_object(home, &srv, &hash, "fresh\n");
    for id in [&blob, &tree, &commit, &garbage] {
        age(&loose_path(&srv, id), three_weeks);
    }
    let out = maintenance(home, &srv, &[], &["--task=loose-objects"]);
    assert!(out.contains("pruned 1 unreachable"), "{out}");
    let exists = |id: &str| git(home, &srv, &["cat-file", "-e", id]).status.success();
    assert!(!exists(&garbage));
    for id in [&blob, &tree, &commit, &fresh] {
        assert!(exists(id), "{id} lost");
        assert!(!loose_path(&srv, id).exists(), "{id} still loose");
    }
    git_ok(home, &srv, &["fsck", "--strict", "--no-dangling"]);
    // gc.pruneExpire=never keeps everything.
    let kept = write_object(home, &srv, &hash, "kept\n");
    age(&loose_path(&srv, &kept), three_weeks);
    maintenance(
        home,
        &srv,
        &["gc.pruneExpire=never"],
        &["--task=loose-objects"],
    );
    assert!(exists(&kept));
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
        home,
        &srv,
        &["refstore.redundantPackExpire=now"],
        &["--task=incremental-repack"],
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
