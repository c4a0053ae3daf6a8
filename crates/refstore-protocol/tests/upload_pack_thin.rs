//! Thin packs: a client that asks for `thin-pack` (a v0 capability, a v2
//! fetch argument) gets deltas against objects it has, as reference deltas
//! whose bases the pack leaves out; `git index-pack --fix-thin` completes
//! them from the client's objects. A client that does not ask gets a pack
//! `git index-pack` accepts alone. Repositories are made by git; the packs
//! are read entry by entry here to see which bases they name.

use refstore_fs::real::RealFs;
use refstore_protocol::upload_pack::{upload_pack, Options};
use refstore_protocol::{ProtocolVersion, Repository};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;
use std::sync::Arc;

mod support;
use support::{git, git_in};

/// Commits `count` versions of growing files at the top and in
/// subdirectories, numbered from `from`.
fn commit_versions(path: &Path, from: usize, count: usize) {
    std::fs::create_dir_all(path.join("src/deep")).unwrap();
    for commit in from..from + count {
        for (i, name) in ["top.txt", "src/a.txt", "src/deep/b.txt"]
            .iter()
            .enumerate()
        {
            let name = path.join(name);
            let mut text = std::fs::read_to_string(&name).unwrap_or_default();
            for line in 0..(5 + i * 3) {
                text.push_str(&format!(
                    "commit {commit}, line {line}: some text that is the same in every version\n"
                ));
            }
            std::fs::write(&name, text).unwrap();
        }
        // A file that does not change, so trees have more than one entry.
        std::fs::write(
            path.join("src/fixed.txt"),
            "a file that does not change\n".repeat(20),
        )
        .unwrap();
        git(path, &["add", "-A"]);
        git(path, &["commit", "-q", "-m", &format!("commit {commit}")]);
    }
}

/// The packets of a request.
fn packets(lines: &[&str]) -> Vec<u8> {
    let mut input = Vec::new();
    for line in lines {
        match *line {
            "0000" | "0001" => input.extend_from_slice(line.as_bytes()),
            _ => input.extend_from_slice(format!("{:04x}{line}\n", line.len() + 5).as_bytes()),
        }
    }
    input
}

/// A stateless request to refstore's upload-pack in `dir`; its response.
fn serve(dir: &Path, version: ProtocolVersion, input: &[u8]) -> Vec<u8> {
    let repo = refstore_repo::Repository::open(Arc::new(RealFs::new()), dir, &[])
        .and_then(Repository::serve)
        .unwrap();
    let options = Options {
        stateless_rpc: true,
        advertise_refs: false,
        version,
    };
    let mut response = Vec::new();
    upload_pack(&repo, &options, &mut &input[..], &mut response).unwrap();
    response
}

/// The pack of a v2 fetch of `want` by a client that has `have`, with the
/// `thin-pack` argument if `thin`.
fn fetch_v2(dir: &Path, want: &str, have: &str, thin: bool) -> Vec<u8> {
    let (want, have) = (format!("want {want}"), format!("have {have}"));
    let mut arguments = vec!["ofs-delta", &want, &have];
    if thin {
        arguments.push("thin-pack");
    }
    arguments.extend(["no-progress", "done"]);
    let response = serve(
        dir,
        ProtocolVersion::V2,
        &support::fetch_request(&arguments),
    );
    support::v2_pack(&response)
}

/// The pack of a v0 fetch without side-band (the pack is the rest of the
/// response), with the `thin-pack` capability if `thin`.
fn fetch_v0(dir: &Path, want: &str, have: &str, thin: bool) -> Vec<u8> {
    let capabilities = if thin {
        " thin-pack ofs-delta"
    } else {
        " ofs-delta"
    };
    let want = format!("want {want}{capabilities}");
    let have = format!("have {have}");
    let response = serve(
        dir,
        ProtocolVersion::V0,
        &packets(&[&want, "0000", &have, "done"]),
    );
    // The acknowledgements come first: "ACK <id>\n" in one packet.
    let start = response
        .windows(4)
        .position(|w| w == b"PACK")
        .expect("a pack");
    response[start..].to_vec()
}

/// What a pack holds, read entry by entry.
#[derive(Debug, Default)]
struct Entries {
    whole: usize,
    ofs_deltas: usize,
    /// The bases reference deltas name.
    ref_bases: Vec<String>,
}

fn read_entries(pack: &[u8]) -> Entries {
    assert_eq!(&pack[..4], b"PACK");
    let count = u32::from_be_bytes(pack[8..12].try_into().unwrap());
    let mut at = 12;
    let mut entries = Entries::default();
    for _ in 0..count {
        let mut byte = pack[at];
        at += 1;
        let kind = (byte >> 4) & 7;
        while byte & 0x80 != 0 {
            byte = pack[at];
            at += 1;
        }
        match kind {
            6 => {
                while pack[at] & 0x80 != 0 {
                    at += 1;
                }
                at += 1;
                entries.ofs_deltas += 1;
            }
            7 => {
                let base: String = pack[at..at + 20]
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                entries.ref_bases.push(base);
                at += 20;
            }
            1..=4 => entries.whole += 1,
            other => panic!("entry type {other}"),
        }
        let mut inflate = flate2::Decompress::new(true);
        let mut sink = vec![0u8; 1 << 16];
        loop {
            let before = inflate.total_in();
            let status = inflate
                .decompress(&pack[at..], &mut sink, flate2::FlushDecompress::None)
                .unwrap();
            at += (inflate.total_in() - before) as usize;
            if status == flate2::Status::StreamEnd {
                break;
            }
        }
    }
    assert_eq!(at + 20, pack.len(), "the pack ends with its checksum");
    entries
}

/// `git index-pack` of `pack` in `repo` (`--fix-thin` if `fix_thin`).
fn index_pack(repo: &Path, pack: &[u8], fix_thin: bool) -> Output {
    let mut args = vec!["index-pack", "--stdin"];
    if fix_thin {
        args.push("--fix-thin");
    }
    support::git_with(repo, &args, &[], pack)
}

fn objects(repo: &Path) -> BTreeSet<String> {
    git(
        repo,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname)",
        ],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

/// A served repository with history up to `old` (which a client has, in
/// its own repository) and `new` on top of it.
struct Setup {
    _dir: tempfile::TempDir,
    server: std::path::PathBuf,
    client: std::path::PathBuf,
    old: String,
    new: String,
    /// The pack made of the new history, for [`Stored::Pushed`].
    pushed_pack: Option<String>,
}

/// `stored`: how the new history is stored on the server.
#[derive(Clone, Copy, Debug)]
enum Stored {
    /// Loose objects.
    Loose,
    /// A pack of its own, made by `git repack` (whole objects and deltas
    /// among the new objects).
    Pack,
    /// A thin pack completed by `index-pack --fix-thin`, as a push stores
    /// it: reference deltas against the client's objects.
    Pushed,
    /// Everything repacked into one pack with a reachability bitmap
    /// (`git repack -adb`), so objects are counted from the bitmap.
    Bitmapped,
}

fn setup(stored: Stored, new_commits: usize) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("server");
    let client = dir.path().join("client");
    std::fs::create_dir(&server).unwrap();
    git(&server, &["init", "-q", "-b", "main"]);
    commit_versions(&server, 0, 10);
    git(&server, &["repack", "-adq"]);
    let old = git(&server, &["rev-parse", "main"]);
    git(
        dir.path(),
        &["clone", "-q", "--bare", "--no-local", "server", "client"],
    );
    commit_versions(&server, 10, new_commits);
    let new = git(&server, &["rev-parse", "main"]);
    let mut pushed_pack = None;
    match stored {
        Stored::Loose => {}
        Stored::Pack => {
            git(&server, &["repack", "-dq"]);
        }
        Stored::Bitmapped => {
            git(&server, &["repack", "-adbq"]);
            let pack_dir = server.join(".git/objects/pack");
            let bitmaps = std::fs::read_dir(&pack_dir)
                .unwrap()
                .filter(|e| e.as_ref().unwrap().path().extension() == Some("bitmap".as_ref()))
                .count();
            assert_eq!(bitmaps, 1, "git repack -adb wrote no bitmap");
        }
        Stored::Pushed => {
            let pack = support::git_with(
                &server,
                &["pack-objects", "--thin", "--stdout", "--revs", "-q"],
                &[],
                format!("{new}\n^{old}\n").as_bytes(),
            );
            assert!(pack.status.success());
            let name = git_in(
                &server,
                &["index-pack", "--fix-thin", "--stdin"],
                &pack.stdout,
            );
            pushed_pack = Some(name.trim_start_matches("pack\t").to_owned());
            git(&server, &["prune-packed"]);
        }
    }
    Setup {
        _dir: dir,
        server,
        client,
        old,
        new,
        pushed_pack,
    }
}

/// The objects of `new` that the client of `s` lacks.
fn missing(s: &Setup) -> BTreeSet<String> {
    git(
        &s.server,
        &["rev-list", "--objects", &s.new, &format!("^{}", s.old)],
    )
    .lines()
    .map(|l| l.split(' ').next().unwrap().to_owned())
    .collect()
}

/// Checks a thin pack: it names bases the client has and does not send,
/// `index-pack` refuses it alone and completes it with `--fix-thin` in the
/// client, which is then complete; the name of the pack stored there.
fn check_thin(s: &Setup, pack: &[u8]) -> String {
    let entries = read_entries(pack);
    assert!(
        !entries.ref_bases.is_empty(),
        "a thin pack has reference deltas against the client's objects: {entries:?}"
    );
    let client_objects = objects(&s.client);
    let sent = missing(s);
    for base in &entries.ref_bases {
        assert!(
            client_objects.contains(base),
            "base {base} not on the client"
        );
        assert!(!sent.contains(base), "base {base} is sent");
    }
    let alone = tempfile::tempdir().unwrap();
    git(alone.path(), &["init", "-q", "--bare"]);
    let out = index_pack(alone.path(), pack, false);
    assert!(
        !out.status.success(),
        "a thin pack needs the client's objects"
    );
    let out = index_pack(&s.client, pack, true);
    assert!(
        out.status.success(),
        "index-pack --fix-thin: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    git(&s.client, &["update-ref", "refs/heads/main", &s.new]);
    git(&s.client, &["fsck", "--strict", "--no-dangling"]);
    let now = objects(&s.client);
    assert!(sent.iter().all(|id| now.contains(id)));
    let stored = String::from_utf8(out.stdout).unwrap();
    stored.trim().trim_start_matches("pack\t").to_owned()
}

/// Checks a self-contained pack: `index-pack` accepts it alone, and it
/// holds the missing objects; anything more is on the client already (a
/// file the client has at another path is sent again, as git does).
fn check_whole(s: &Setup, pack: &[u8]) {
    let entries = read_entries(pack);
    let alone = tempfile::tempdir().unwrap();
    git(alone.path(), &["init", "-q", "--bare"]);
    let out = index_pack(alone.path(), pack, false);
    assert!(
        out.status.success(),
        "a pack without thin-pack stands alone: {} ({entries:?})",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = objects(alone.path());
    let missing = missing(s);
    assert!(
        sent.is_superset(&missing),
        "{:?} not sent",
        missing.difference(&sent)
    );
    let client = objects(&s.client);
    let extra: Vec<_> = sent.difference(&missing).collect();
    assert!(
        extra.iter().all(|id| client.contains(*id)),
        "{extra:?} sent"
    );
}

#[test]
fn thin_packs_only_for_clients_that_ask() {
    for stored in [
        Stored::Loose,
        Stored::Pack,
        Stored::Pushed,
        Stored::Bitmapped,
    ] {
        for version in [ProtocolVersion::V0, ProtocolVersion::V2] {
            let s = setup(stored, 3);
            let fetch = match version {
                ProtocolVersion::V2 => fetch_v2,
                _ => fetch_v0,
            };
            let whole = fetch(&s.server, &s.new, &s.old, false);
            check_whole(&s, &whole);
            let thin = fetch(&s.server, &s.new, &s.old, true);
            assert!(
                thin.len() < whole.len(),
                "{stored:?} {version:?}: thin {} bytes, whole {}",
                thin.len(),
                whole.len()
            );
            check_thin(&s, &thin);
        }
    }
}

#[test]
fn stored_deltas_against_the_clients_objects_are_copied() {
    let s = setup(Stored::Pushed, 3);
    let thin = fetch_v2(&s.server, &s.new, &s.old, true);
    // Every object the push stored as a reference delta against an object
    // the client has is sent so; nothing is compressed afresh.
    let stored_bases: BTreeSet<String> = {
        let name = s.pushed_pack.as_ref().unwrap();
        let pack = format!(".git/objects/pack/pack-{name}.idx");
        let client = objects(&s.client);
        git(&s.server, &["verify-pack", "-v", &pack])
            .lines()
            .filter_map(|l| l.split_whitespace().nth(6).map(str::to_owned))
            .filter(|base| client.contains(base))
            .collect()
    };
    assert!(!stored_bases.is_empty());
    let sent: BTreeSet<String> = read_entries(&thin).ref_bases.into_iter().collect();
    assert!(
        stored_bases.is_subset(&sent),
        "stored bases {stored_bases:?}, sent {sent:?}"
    );
    check_thin(&s, &thin);
}

#[test]
fn long_histories_keep_delta_chains_within_fifty() {
    let s = setup(Stored::Loose, 120);
    let thin = fetch_v2(&s.server, &s.new, &s.old, true);
    let name = check_thin(&s, &thin);
    // The client's pack, completed, has no chain longer than 50.
    let pack = format!("objects/pack/pack-{name}.idx");
    let verify = git(&s.client, &["verify-pack", "-v", &pack]);
    let longest = verify
        .lines()
        .filter_map(|l| l.strip_prefix("chain length = "))
        .filter_map(|l| l.split(':').next()?.trim().parse::<usize>().ok())
        .max()
        .unwrap_or(0);
    assert!(longest > 5, "versions are sent as chains ({longest})");
    assert!(longest <= 50, "a chain of {longest}");
}

/// A small pseudo-random generator (xorshift), so that every run tries the
/// same histories and a failure names its seed.
struct Random(u64);

impl Random {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Random histories: files edited, added, deleted and moved between
/// directories, on two branches that merge; a client that has an earlier
/// commit fetches the rest, thin and not, from loose or packed objects.
#[test]
fn random_histories_give_packs_git_completes() {
    const NAMES: [&str; 8] = [
        "a.txt",
        "b.txt",
        "d1/c.txt",
        "d1/d.txt",
        "d1/d2/e.txt",
        "d3/f.txt",
        "d3/g.txt",
        "h.txt",
    ];
    for seed in 1..=6u64 {
        let mut random = Random(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let dir = tempfile::tempdir().unwrap();
        let server = dir.path().join("server");
        std::fs::create_dir(&server).unwrap();
        git(&server, &["init", "-q", "-b", "main"]);
        let mut commits = Vec::new();
        for c in 0..16 {
            if c == 8 {
                git(&server, &["checkout", "-q", "-b", "side", "HEAD~3"]);
            }
            if c == 12 {
                git(&server, &["checkout", "-q", "main"]);
                git(&server, &["merge", "-q", "--no-edit", "-s", "ours", "side"]);
                commits.push(git(&server, &["rev-parse", "HEAD"]));
            }
            for _ in 0..1 + random.below(3) {
                let name = server.join(NAMES[random.below(NAMES.len())]);
                match random.below(6) {
                    0 => {
                        let _ = std::fs::remove_file(&name);
                    }
                    1 => {
                        let to = server.join(NAMES[random.below(NAMES.len())]);
                        if name.exists() && !to.exists() {
                            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                            std::fs::rename(&name, &to).unwrap();
                        }
                    }
                    _ => {
                        std::fs::create_dir_all(name.parent().unwrap()).unwrap();
                        let mut text = std::fs::read_to_string(&name).unwrap_or_default();
                        for line in 0..1 + random.below(30) {
                            let at = random.below(text.len() + 1);
                            let at = text[..at].rfind('\n').map_or(0, |i| i + 1);
                            text.insert_str(at, &format!("seed {seed} commit {c} line {line}\n"));
                        }
                        std::fs::write(&name, text).unwrap();
                    }
                }
            }
            git(&server, &["add", "-A"]);
            git(
                &server,
                &[
                    "commit",
                    "-q",
                    "--allow-empty",
                    "-m",
                    &format!("commit {c}"),
                ],
            );
            commits.push(git(&server, &["rev-parse", "HEAD"]));
            if c == 5 && random.below(2) == 0 {
                git(&server, &["repack", "-adq"]);
            }
        }
        if random.below(2) == 0 {
            git(&server, &["repack", "-dq"]);
        }
        let old = commits[1 + random.below(10)].clone();
        let new = git(&server, &["rev-parse", "main"]);
        for thin in [false, true] {
            let client = dir.path().join(format!("client-{thin}"));
            git(
                dir.path(),
                &["init", "-q", "--bare", client.to_str().unwrap()],
            );
            git(&client, &["fetch", "-q", server.to_str().unwrap(), &old]);
            git(&client, &["update-ref", "refs/heads/main", &old]);
            let s = Setup {
                _dir: tempfile::tempdir().unwrap(),
                server: server.clone(),
                client,
                old: old.clone(),
                new: new.clone(),
                pushed_pack: None,
            };
            let pack = fetch_v2(&s.server, &s.new, &s.old, thin);
            if thin {
                let out = index_pack(&s.client, &pack, true);
                assert!(
                    out.status.success(),
                    "seed {seed}: index-pack --fix-thin: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                for base in read_entries(&pack).ref_bases {
                    assert!(!missing(&s).contains(&base), "seed {seed}: {base} is sent");
                }
                git(&s.client, &["update-ref", "refs/heads/main", &s.new]);
                git(&s.client, &["fsck", "--strict", "--no-dangling"]);
            } else {
                check_whole(&s, &pack);
            }
        }
    }
}

/// A commit with more boundary parents than the walk compares path by
/// path (an octopus merge of 18 branches the client has): the client's
/// objects are found by walking the boundary trees whole, and the thin
/// pack's bases by pairing trees in the pack writer.
#[test]
fn many_boundary_commits_still_give_thin_packs() {
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("server");
    std::fs::create_dir(&server).unwrap();
    git(&server, &["init", "-q", "-b", "main"]);
    commit_versions(&server, 0, 3);
    let mut branches = Vec::new();
    for b in 0..18 {
        let name = format!("b{b}");
        git(&server, &["checkout", "-q", "-b", &name, "main"]);
        std::fs::write(
            server.join(format!("branch{b}.txt")),
            format!("branch {b}\n").repeat(30),
        )
        .unwrap();
        git(&server, &["add", "-A"]);
        git(&server, &["commit", "-q", "-m", &name]);
        branches.push(name);
    }
    git(&server, &["checkout", "-q", "main"]);
    git(&server, &["repack", "-adq"]);
    let client = dir.path().join("client");
    git(
        dir.path(),
        &["clone", "-q", "--bare", "--no-local", "server", "client"],
    );
    let mut merge = vec!["merge", "-q", "--no-edit"];
    merge.extend(branches.iter().map(String::as_str));
    git(&server, &merge);
    commit_versions(&server, 3, 2);
    let new = git(&server, &["rev-parse", "main"]);
    let haves: Vec<String> = branches
        .iter()
        .map(|b| format!("have {}", git(&server, &["rev-parse", b])))
        .collect();
    let want = format!("want {new}");
    let mut arguments = vec!["thin-pack", "no-progress", &want];
    arguments.extend(haves.iter().map(String::as_str));
    arguments.push("done");
    let request = support::fetch_request(&arguments);
    let pack = support::v2_pack(&serve(&server, ProtocolVersion::V2, &request));
    // The first branch tip stands for the client in `missing`.
    let s = Setup {
        _dir: dir,
        old: git(&server, &["rev-parse", &branches[0]]),
        server,
        client,
        new,
        pushed_pack: None,
    };
    let entries = read_entries(&pack);
    assert!(!entries.ref_bases.is_empty(), "{entries:?}");
    let out = index_pack(&s.client, &pack, true);
    assert!(
        out.status.success(),
        "index-pack --fix-thin: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let client_objects = objects(&s.client);
    for base in &entries.ref_bases {
        assert!(client_objects.contains(base));
    }
    git(&s.client, &["update-ref", "refs/heads/main", &s.new]);
    git(&s.client, &["fsck", "--strict", "--no-dangling"]);
}
