//! Large objects on the way in: a push of a 600 MB blob (of zeros, so its
//! pack is 0.6 MB) through `refstore receive-pack`, kept loose and kept as
//! a pack, and the same pack through `refstore index-pack --stdin` and
//! `unpack-objects`, each peaking well below the blob's size in resident
//! memory (measured with `wait4` of the one child, not timed); git then
//! reads the blob. A pack of zlib bombs that inflates beyond
//! `refstore.maxPushInflated` is refused with a clear message and leaves
//! the objects directory as it was, through `refstore receive-pack` and
//! through `refstore serve --max-push-inflated`. The server, pushed the
//! 600 MB blob over HTTP, peaks low too (its `VmHWM`, the kernel's record
//! of its peak resident memory, as it runs many requests in one process).

mod served;
mod support;

use refstore_testsupport::pkt_line::{after_first_flush as report, pkt};
use served::{git_net, Served};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::{git_ok, isolate, noise, run_with_input, stderr};

/// The blob the issue names: 600 MB.
const BLOB_SIZE: u64 = 600 << 20;

/// The most resident memory the receiving side may use for it.
const MAX_RSS: u64 = 64 << 20;

const ZERO: &str = "0000000000000000000000000000000000000000";

/// What a measured child did.
struct Measured {
    stdout: Vec<u8>,
    stderr: String,
    success: bool,
    /// Its peak resident set size, in bytes.
    max_rss: u64,
}

/// Runs `cmd` with `input` on its standard input, and reaps it with
/// `wait4`, which reports the resources of that child alone.
#[allow(clippy::zombie_processes, reason = "reaped by wait4, not Child::wait")]
fn measured(cmd: &mut Command, input: Vec<u8>) -> Measured {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A program that refuses the input may stop reading it early.
    let writer = std::thread::spawn(move || drop(stdin.write_all(&input)));
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        out.read_to_end(&mut bytes).unwrap();
        bytes
    });
    let mut errors = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut errors)
        .unwrap();
    let stdout = reader.join().unwrap();
    writer.join().unwrap();
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills in; pid is our child,
    // not yet reaped (std reaps only in wait/try_wait, never called here).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
    Measured {
        stdout,
        stderr: errors,
        success: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        // Linux reports kilobytes.
        max_rss: u64::try_from(usage.ru_maxrss).unwrap() * 1024,
    }
}

/// A source repository whose one commit holds `files` (name, size, byte
/// repeated), and its commit id.
fn source(home: &Path, files: &[(&str, u64, u8)]) -> (PathBuf, String) {
    let src = home.join("src");
    git_ok(home, home, &["init", "-q", "-b", "main", "src"]);
    for &(name, size, byte) in files {
        let path = src.join(name);
        if byte == 0 {
            // Sparse: no disk for the zeros, and git reads it in pieces.
            std::fs::File::create(&path).unwrap().set_len(size).unwrap();
        } else {
            std::fs::write(&path, vec![byte; size as usize]).unwrap();
        }
    }
    git_ok(home, &src, &["add", "."]);
    git_ok(home, &src, &["commit", "-q", "-m", "files"]);
    let head = git_ok(home, &src, &["rev-parse", "HEAD"]).trim().to_owned();
    (src, head)
}

/// The pack of `commit`'s history, as `git push` would send it.
fn pack(home: &Path, src: &Path, commit: &str) -> Vec<u8> {
    let mut cmd = Command::new("git");
    isolate(&mut cmd, home)
        .current_dir(src)
        .args(["pack-objects", "--stdout", "--revs", "-q"]);
    let out = run_with_input(&mut cmd, format!("{commit}\n").as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    out.stdout
}

/// A new bare repository `name` with `config` set.
fn bare(home: &Path, name: &str, config: &[(&str, &str)]) -> PathBuf {
    git_ok(home, home, &["init", "-q", "--bare", name]);
    let repo = home.join(name);
    for (key, value) in config {
        git_ok(home, &repo, &["config", key, value]);
    }
    repo
}

/// `refstore [-c <config>] receive-pack <repo>` fed the creation of
/// refs/heads/main at `commit` with `pack`, measured.
fn receive(home: &Path, repo: &Path, config: &[&str], commit: &str, pack: &[u8]) -> Measured {
    let input = [
        pkt(format!("{ZERO} {commit} refs/heads/main\0report-status")),
        b"0000".to_vec(),
        pack.to_vec(),
    ]
    .concat();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
    isolate(&mut cmd, home).current_dir(home);
    for setting in config {
        cmd.args(["-c", setting]);
    }
    cmd.arg("receive-pack").arg(repo);
    measured(&mut cmd, input)
}

/// Every path below `dir`, sorted.
fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path.clone());
            }
            paths.push(path);
        }
    }
    paths.sort();
    paths
}

/// Requires that git reads the 600 MB blob from `repo`, and that the
/// repository is sound.
fn git_reads_the_blob(home: &Path, repo: &Path, commit: &str) {
    let size = git_ok(home, repo, &["cat-file", "-s", &format!("{commit}:big")]);
    assert_eq!(size.trim(), BLOB_SIZE.to_string());
    git_ok(home, repo, &["fsck", "--no-dangling", "--strict"]);
}

#[test]
fn a_push_of_a_600_mb_blob_peaks_far_below_its_size() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (src, commit) = source(home, &[("big", BLOB_SIZE, 0), ("small", 6, b's')]);
    let pack = pack(home, &src, &commit);
    assert!(pack.len() < 4 << 20, "the pack is {} bytes", pack.len());

    // Three objects: below receive.unpackLimit, stored loose; then with a
    // limit of one, kept as a pack. Both with fsckObjects.
    for (name, limit) in [("loose", "100"), ("packed", "1")] {
        let repo = bare(
            home,
            name,
            &[
                ("receive.unpackLimit", limit),
                ("receive.fsckObjects", "true"),
            ],
        );
        let run = receive(home, &repo, &[], &commit, &pack);
        assert!(run.success, "{name}: {}", run.stderr);
        assert_eq!(
            report(&run.stdout),
            ["unpack ok", "ok refs/heads/main"],
            "{name}: {}",
            run.stderr
        );
        assert!(
            run.max_rss < MAX_RSS,
            "{name}: receive-pack peaked at {} bytes",
            run.max_rss
        );
        git_reads_the_blob(home, &repo, &commit);
        let packs = std::fs::read_dir(repo.join("objects/pack"))
            .unwrap()
            .count();
        assert_eq!(packs > 0, name == "packed", "{name}: {packs} pack files");
    }
}

#[test]
fn index_pack_and_unpack_objects_of_a_600_mb_blob_peak_far_below_its_size() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (src, commit) = source(home, &[("big", BLOB_SIZE, 0)]);
    let pack = pack(home, &src, &commit);

    let repo = bare(home, "indexed", &[]);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
    isolate(&mut cmd, home)
        .current_dir(&repo)
        .args(["index-pack", "--stdin"]);
    let run = measured(&mut cmd, pack.clone());
    assert!(run.success, "{}", run.stderr);
    assert!(
        run.max_rss < MAX_RSS,
        "index-pack peaked at {} bytes",
        run.max_rss
    );
    git_reads_the_blob(home, &repo, &commit);
    // The index is the one git writes for the same pack.
    let checksum = String::from_utf8(run.stdout).unwrap();
    let checksum = checksum.trim().strip_prefix("pack\t").unwrap();
    let ours = std::fs::read(repo.join(format!("objects/pack/pack-{checksum}.idx"))).unwrap();
    let pack_file = home.join("copy.pack");
    std::fs::write(&pack_file, &pack).unwrap();
    git_ok(home, home, &["index-pack", "-o", "copy.idx", "copy.pack"]);
    assert_eq!(ours, std::fs::read(home.join("copy.idx")).unwrap());

    let repo = bare(home, "unpacked", &[]);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
    isolate(&mut cmd, home)
        .current_dir(&repo)
        .args(["unpack-objects", "-q"]);
    let run = measured(&mut cmd, pack);
    assert!(run.success, "{}", run.stderr);
    assert!(
        run.max_rss < MAX_RSS,
        "unpack-objects peaked at {} bytes",
        run.max_rss
    );
    git_ok(home, &repo, &["update-ref", "refs/heads/main", &commit]);
    git_reads_the_blob(home, &repo, &commit);
}

#[test]
fn a_pack_of_zlib_bombs_beyond_the_bound_is_refused_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    // Four blobs of 4 MiB, each a few KiB compressed: 16 MiB inflated.
    let files: Vec<(String, u64, u8)> = (0..4u8)
        .map(|i| (format!("bomb{i}"), 4 << 20, b'a' + i))
        .collect();
    let files: Vec<(&str, u64, u8)> = files.iter().map(|(n, s, b)| (&n[..], *s, *b)).collect();
    let (src, commit) = source(home, &files);
    let pack = pack(home, &src, &commit);
    assert!(pack.len() < 1 << 20, "the pack is {} bytes", pack.len());

    for (name, limit) in [("loose", "100"), ("packed", "1")] {
        let repo = bare(home, name, &[("receive.unpackLimit", limit)]);
        let before = listing(&repo.join("objects"));
        let run = receive(
            home,
            &repo,
            &["refstore.maxPushInflated=10m"],
            &commit,
            &pack,
        );
        let refusal = "pack inflates beyond 10485760 bytes (refstore.maxPushInflated)";
        assert_eq!(
            report(&run.stdout),
            [
                format!("unpack {refusal}"),
                "ng refs/heads/main unpacker error".to_owned()
            ],
            "{name}: {}",
            run.stderr
        );
        assert_eq!(listing(&repo.join("objects")), before, "{name}");
        let refs = git_ok(home, &repo, &["for-each-ref"]);
        assert_eq!(refs, "", "{name}");

        // Within the bound, the same pack is taken.
        let run = receive(
            home,
            &repo,
            &["refstore.maxPushInflated=20m"],
            &commit,
            &pack,
        );
        assert_eq!(
            report(&run.stdout),
            ["unpack ok", "ok refs/heads/main"],
            "{name}: {}",
            run.stderr
        );
    }
}

#[test]
fn serve_refuses_a_push_beyond_max_push_inflated() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let files: Vec<(String, u64, u8)> = (0..4u8)
        .map(|i| (format!("bomb{i}"), 4 << 20, b'a' + i))
        .collect();
    let files: Vec<(&str, u64, u8)> = files.iter().map(|(n, s, b)| (&n[..], *s, *b)).collect();
    let (src, _) = source(home, &files);
    let root = home.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let served = bare(&root, "proj.git", &[]);
    let users = home.join("users");
    std::fs::write(&users, "bob:pw\n").unwrap();
    let before = listing(&served.join("objects"));
    let start = || {
        Served::start(
            home,
            &root,
            &[
                "--allow-push",
                "--credentials",
                users.to_str().unwrap(),
                "--max-push-inflated",
                "10485760",
            ],
        )
    };
    let server = start();
    let url = server.url_as("bob", "pw", "proj.git");
    let push = git_net(home, &src, &["push", &url, "main"]);
    assert!(!push.status.success());
    let text = stderr(&push);
    assert!(
        text.contains("pack inflates beyond 10485760 bytes (refstore.maxPushInflated)"),
        "{text}"
    );
    assert_eq!(listing(&served.join("objects")), before);
    assert_eq!(git_ok(home, &served, &["for-each-ref"]), "");
    drop(server);

    // The repository's own setting gives way to the server's.
    git_ok(home, &served, &["config", "refstore.maxPushInflated", "1g"]);
    let server = start();
    let url = server.url_as("bob", "pw", "proj.git");
    let push = git_net(home, &src, &["push", &url, "main"]);
    assert!(
        stderr(&push).contains("pack inflates beyond 10485760 bytes"),
        "{}",
        stderr(&push)
    );
    drop(server);

    // Within the server's default bound, the same push is taken.
    let server = Served::start(
        home,
        &root,
        &["--allow-push", "--credentials", users.to_str().unwrap()],
    );
    let url = server.url_as("bob", "pw", "proj.git");
    let push = git_net(home, &src, &["push", &url, "main"]);
    assert!(push.status.success(), "{}", stderr(&push));
}

/// The peak resident memory of the running process `pid`, in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap();
    let kilobytes: u64 = line.trim().trim_end_matches("kB").trim().parse().unwrap();
    kilobytes * 1024
}

#[test]
fn serve_takes_a_push_of_a_600_mb_blob_in_little_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (src, commit) = source(home, &[("big", BLOB_SIZE, 0)]);
    let root = home.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let served = bare(&root, "proj.git", &[("receive.fsckObjects", "true")]);
    let users = home.join("users");
    std::fs::write(&users, "bob:pw\n").unwrap();
    let server = Served::start(
        home,
        &root,
        &["--allow-push", "--credentials", users.to_str().unwrap()],
    );
    let url = server.url_as("bob", "pw", "proj.git");
    let push = git_net(home, &src, &["push", &url, "main"]);
    assert!(push.status.success(), "{}", stderr(&push));
    let peak = peak_rss(server.pid());
    assert!(peak < MAX_RSS, "the server peaked at {peak} bytes");
    git_reads_the_blob(home, &served, &commit);
}

/// A pack of four commits, in `format`: three 3000-byte blobs that git
/// stores whole, and a small file changed in each commit that it stores
/// as deltas; and the pack of the three blobs alone.
fn mixed_pack(home: &Path, format: &str) -> (Vec<u8>, Vec<u8>) {
    let src = home.join(format!("mixed-{format}"));
    git_ok(
        home,
        home,
        &[
            "init",
            "-q",
            &format!("--object-format={format}"),
            src.to_str().unwrap(),
        ],
    );
    for round in 1..=4u64 {
        if round < 4 {
            std::fs::write(src.join(format!("big{round}")), noise(round, 3000)).unwrap();
        }
        let small: String = (0..100 * round).map(|i| format!("{i}\n")).collect();
        std::fs::write(src.join("small"), small).unwrap();
        git_ok(home, &src, &["add", "."]);
        git_ok(home, &src, &["commit", "-q", "-m", &round.to_string()]);
    }
    let head = git_ok(home, &src, &["rev-parse", "HEAD"]);
    let blobs = git_ok(
        home,
        &src,
        &["rev-parse", "HEAD:big1", "HEAD:big2", "HEAD:big3"],
    );
    let mut cmd = Command::new("git");
    isolate(&mut cmd, home)
        .current_dir(&src)
        .args(["pack-objects", "--stdout", "-q"]);
    let only_large = run_with_input(&mut cmd, blobs.as_bytes());
    assert!(only_large.status.success(), "{}", stderr(&only_large));
    (pack(home, &src, head.trim()), only_large.stdout)
}

/// Objects of `repo` as `git cat-file --batch-check` lists them, sorted.
fn all_objects(home: &Path, repo: &Path) -> String {
    git_ok(
        home,
        repo,
        &["cat-file", "--batch-all-objects", "--batch-check"],
    )
}

#[test]
fn large_objects_among_small_ones_and_deltas_are_indexed_as_git_indexes_them() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    for format in ["sha1", "sha256"] {
        let (pack, only_large) = mixed_pack(home, format);
        let bare_in = |name: &str| {
            let name = format!("{name}-{format}");
            git_ok(
                home,
                home,
                &[
                    "init",
                    "-q",
                    "--bare",
                    &format!("--object-format={format}"),
                    &name,
                ],
            );
            home.join(name)
        };
        let gits = bare_in("git");
        let ours = bare_in("indexed");
        // With a threshold of 2 KiB the three blobs are large, the
        // small file's versions (up to 1.1 KB) and their deltas are not;
        // then a pack of large objects only.
        for input in [&pack, &only_large] {
            let mut cmd = Command::new("git");
            isolate(&mut cmd, home)
                .current_dir(&gits)
                .args(["index-pack", "--stdin"]);
            let theirs = run_with_input(&mut cmd, input);
            assert!(theirs.status.success(), "{}", stderr(&theirs));
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
            isolate(&mut cmd, home).current_dir(&ours).args([
                "-c",
                "core.bigFileThreshold=2k",
                "index-pack",
                "--stdin",
            ]);
            let run = run_with_input(&mut cmd, input);
            assert!(run.status.success(), "{format}: {}", stderr(&run));
            let checksum = String::from_utf8(run.stdout).unwrap();
            let checksum = checksum.trim().strip_prefix("pack\t").unwrap();
            let idx = format!("objects/pack/pack-{checksum}.idx");
            assert_eq!(
                std::fs::read(ours.join(&idx)).unwrap(),
                std::fs::read(gits.join(&idx)).unwrap(),
                "{format}"
            );
        }

        let unpacked = bare_in("unpacked");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
        isolate(&mut cmd, home).current_dir(&unpacked).args([
            "-c",
            "core.bigFileThreshold=2k",
            "unpack-objects",
        ]);
        let run = run_with_input(&mut cmd, &pack);
        assert!(run.status.success(), "{format}: {}", stderr(&run));
        assert_eq!(
            all_objects(home, &unpacked),
            all_objects(home, &gits),
            "{format}"
        );
        git_ok(home, &unpacked, &["fsck", "--strict", "--no-dangling"]);

        // At 1 KiB the small file's last versions are large too, and
        // their deltas are refused, by both commands; nothing is stored.
        for command in [&["index-pack", "--stdin"][..], &["unpack-objects"][..]] {
            let repo = bare_in(&format!("refused-{}", command[0]));
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
            isolate(&mut cmd, home)
                .current_dir(&repo)
                .args(["-c", "core.bigFileThreshold=1k"])
                .args(command);
            let run = run_with_input(&mut cmd, &pack);
            assert_eq!(run.status.code(), Some(128), "{format} {command:?}");
            assert!(
                stderr(&run).contains(
                    "deltas of objects of core.bigFileThreshold (1024 bytes) or more are refused"
                ),
                "{format} {command:?}: {}",
                stderr(&run)
            );
            assert_eq!(all_objects(home, &repo), "", "{format} {command:?}");
        }
    }
}

#[test]
fn fsck_judges_a_large_special_blob_by_its_size() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (src, commit) = source(home, &[(".gitmodules", 2 << 20, b'\n')]);
    let pack = pack(home, &src, &commit);
    for (name, limit) in [("loose", "100"), ("packed", "1")] {
        let repo = bare(
            home,
            name,
            &[
                ("receive.unpackLimit", limit),
                ("receive.fsckObjects", "true"),
            ],
        );
        let run = receive(home, &repo, &["core.bigFileThreshold=1m"], &commit, &pack);
        let lines = report(&run.stdout);
        assert_eq!(lines[1], "ng refs/heads/main unpacker error", "{name}");
        assert!(
            run.stderr
                .contains("gitmodulesLarge: .gitmodules too large to parse"),
            "{name}: {}",
            run.stderr
        );
        // Below the threshold the blob is parsed: blank lines are fine.
        let run = receive(home, &repo, &[], &commit, &pack);
        assert_eq!(
            report(&run.stdout),
            ["unpack ok", "ok refs/heads/main"],
            "{name}: {}",
            run.stderr
        );
    }
}
