//! Partial clones (`git clone --filter=...`) served by `refstore
//! upload-pack` to the real git client over file://, in protocol v0 and
//! v2, compared with git's own upload-pack on the same repository: the same
//! objects sent and left out, lazy fetches of the missing blobs that work,
//! and the same refusals when the configuration forbids a filter.

mod support;

use std::path::{Path, PathBuf};
use support::fixtures::Sandbox;
use support::{git, git_ok, isolate, run_with_input, stderr};

const VERSIONS: [&str; 2] = ["0", "2"];

/// A home and the repositories beside it (through `Deref`).
struct Fixture {
    sandbox: Sandbox,
    /// The served repository (with a work tree).
    source: PathBuf,
}

impl std::ops::Deref for Fixture {
    type Target = Sandbox;
    fn deref(&self) -> &Sandbox {
        &self.sandbox
    }
}

impl Fixture {
    /// A repository whose commits change small and large files (some over
    /// 1 KiB, some under) at several depths, older objects packed with
    /// deltas and newer ones loose, an annotated tag; filters allowed.
    fn new() -> Fixture {
        let sandbox = Sandbox::new();
        let source = sandbox.init("source").path;
        let f = Fixture { sandbox, source };
        for i in 0..4 {
            f.commit(i);
        }
        f.git(&f.source, &["tag", "-a", "v1", "-m", "version 1"]);
        f.git(&f.source, &["gc", "-q"]);
        f.commit(4);
        f.git(&f.source, &["config", "uploadpack.allowFilter", "true"]);
        f
    }

    /// Commit `i`: a file growing past 1 KiB, a small file, files two
    /// and three levels down.
    fn commit(&self, i: usize) {
        let deep = self.source.join("a").join("b");
        std::fs::create_dir_all(&deep).unwrap();
        let big: String = (0..i * 20 + 10)
            .map(|line| format!("line {line} of the growing file\n"))
            .collect();
        std::fs::write(self.source.join("big.txt"), big).unwrap();
        std::fs::write(self.source.join(format!("small{i}")), format!("{i}\n")).unwrap();
        std::fs::write(self.source.join("a").join("mid"), format!("mid {i}\n")).unwrap();
        let large: String = (0..200).map(|n| format!("{i} {n}\n")).collect();
        std::fs::write(deep.join("large"), large).unwrap();
        self.git(&self.source, &["add", "-A"]);
        self.git(
            &self.source,
            &["commit", "-q", "-m", &format!("commit {i}")],
        );
    }

    fn git(&self, cwd: &Path, args: &[&str]) -> String {
        git_ok(&self.home, cwd, args)
    }

    fn url(&self) -> String {
        format!("file://{}", self.source.display())
    }

    /// Runs `git <args>` in protocol `version`, through refstore's
    /// upload-pack or git's own (the option goes right after the
    /// subcommand, and `clone` records it for later fetches).
    fn remote(
        &self,
        cwd: &Path,
        version: &str,
        refstore: bool,
        args: &[&str],
    ) -> std::process::Output {
        let upload_pack = match refstore {
            true => format!(
                "--upload-pack={} upload-pack",
                env!("CARGO_BIN_EXE_refstore")
            ),
            false => "--upload-pack=git-upload-pack".to_owned(),
        };
        let protocol = format!("protocol.version={version}");
        let mut full = vec!["-c", &protocol, args[0], &upload_pack];
        full.extend_from_slice(&args[1..]);
        git(&self.home, cwd, &full)
    }

    fn remote_ok(&self, cwd: &Path, version: &str, refstore: bool, args: &[&str]) -> String {
        let out = self.remote(cwd, version, refstore, args);
        assert!(
            out.status.success(),
            "git {args:?} (refstore: {refstore}, v{version}): {}",
            stderr(&out)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// A bare clone with `filters` through refstore or git.
    fn clone(&self, name: &str, version: &str, refstore: bool, filters: &[&str]) -> PathBuf {
        let dir = self.root.join(name);
        let dir_text = dir.to_str().unwrap();
        let url = self.url();
        let mut args = vec!["clone", "-q", "--bare"];
        args.extend_from_slice(filters);
        args.extend_from_slice(&[&url, dir_text]);
        self.remote_ok(&self.root, version, refstore, &args);
        dir
    }

    /// Every object the repository holds, with its type and size, sorted.
    fn objects(&self, repo: &Path) -> Vec<String> {
        let listed = self.git(
            repo,
            &[
                "cat-file",
                "--batch-all-objects",
                "--batch-check=%(objectname) %(objecttype) %(objectsize)",
            ],
        );
        let mut lines: Vec<String> = listed.lines().map(str::to_owned).collect();
        lines.sort();
        lines
    }

    /// `rev-list --objects --all --missing=print`, sorted: what the
    /// history names, with `?` before each missing object.
    fn listing(&self, repo: &Path) -> Vec<String> {
        let listed = self.git(repo, &["rev-list", "--objects", "--all", "--missing=print"]);
        let mut lines: Vec<String> = listed.lines().map(str::to_owned).collect();
        lines.sort();
        lines
    }

    fn fsck(&self, repo: &Path) {
        let out = git(&self.home, repo, &["fsck", "--no-dangling"]);
        assert!(
            out.status.success() && stderr(&out).trim().is_empty(),
            "fsck in {}: {}",
            repo.display(),
            stderr(&out)
        );
    }
}

#[test]
fn filtered_clones_hold_what_git_sends() {
    let f = Fixture::new();
    let all = f.objects(&f.source);
    let cases: &[&[&str]] = &[
        &["--filter=blob:none"],
        &["--filter=blob:limit=1k"],
        &["--filter=tree:0"],
        &["--filter=tree:2"],
        &["--filter=object:type=tree"],
        // Two filters: the client sends `combine:` with encoded parts.
        &["--filter=blob:limit=1k", "--filter=tree:2"],
    ];
    for version in VERSIONS {
        for (n, filters) in cases.iter().enumerate() {
            let ours = f.clone(&format!("ours-{version}-{n}"), version, true, filters);
            let theirs = f.clone(&format!("theirs-{version}-{n}"), version, false, filters);
            let held = f.objects(&ours);
            assert_eq!(held, f.objects(&theirs), "{filters:?} v{version}");
            // Without commits or trees the history cannot be listed.
            if !filters[0].starts_with("--filter=object:type") {
                assert_eq!(
                    f.listing(&ours),
                    f.listing(&theirs),
                    "{filters:?} v{version}"
                );
            }
            assert!(
                held.len() < all.len(),
                "{filters:?} v{version}: nothing left out"
            );
            let config = f.git(&ours, &["config", "remote.origin.partialclonefilter"]);
            assert!(!config.trim().is_empty(), "{filters:?}");
        }
    }

    // blob:limit=1k leaves out exactly the blobs of 1024 bytes or more.
    let ours = f.root.join("ours-2-1");
    let missing: Vec<String> = f
        .listing(&ours)
        .into_iter()
        .filter_map(|line| line.strip_prefix('?').map(str::to_owned))
        .collect();
    let mut large: Vec<String> = all
        .iter()
        .filter_map(|line| {
            let mut parts = line.split(' ');
            let (id, kind, size) = (parts.next()?, parts.next()?, parts.next()?);
            (kind == "blob" && size.parse::<u64>().ok()? >= 1024).then(|| id.to_owned())
        })
        .collect();
    large.sort();
    assert!(!large.is_empty());
    assert_eq!(missing, large);

    // tree:0 sends commits and tags only.
    let ours = f.root.join("ours-2-2");
    for line in f.objects(&ours) {
        assert!(
            line.contains(" commit ") || line.contains(" tag "),
            "tree:0 sent {line}"
        );
    }
}

#[test]
fn blobless_clones_fetch_missing_blobs_lazily() {
    let f = Fixture::new();
    // Protocol v0 lets a client ask for an object no ref names only with
    // this setting (v2 always does), as git's upload-pack.
    f.git(
        &f.source,
        &["config", "uploadpack.allowAnySHA1InWant", "true"],
    );
    for version in VERSIONS {
        let dir = f.root.join(format!("blobless-v{version}"));
        let url = f.url();
        let dir_text = dir.to_str().unwrap();
        // The checkout fetches the blobs of HEAD.
        f.remote_ok(
            &f.root,
            version,
            true,
            &["clone", "-q", "--filter=blob:none", &url, dir_text],
        );
        f.git(&dir, &["config", "protocol.version", version]);
        let missing = |f: &Fixture| {
            f.listing(&dir)
                .iter()
                .filter(|line| line.starts_with('?'))
                .count()
        };
        assert!(missing(&f) > 0, "v{version}: the clone is not partial");
        let head_file = std::fs::read_to_string(dir.join("a").join("b").join("large")).unwrap();
        assert_eq!(head_file, f.git(&f.source, &["show", "HEAD:a/b/large"]));
        // blame reads the file's older versions, fetched lazily.
        let before = missing(&f);
        let blame = f.git(&dir, &["blame", "--porcelain", "HEAD", "--", "a/b/large"]);
        assert!(blame.contains("\n\t"), "v{version}: {blame}");
        assert!(missing(&f) < before, "v{version}: blame fetched nothing");
        // The history's blobs, one lazy fetch per commit.
        let log = f.git(&dir, &["log", "-p", "--format=%s"]);
        assert!(log.contains("+0 199"), "v{version}: {log}");
        assert_eq!(missing(&f), 0, "v{version}");
        f.git(&dir, &["checkout", "-q", "v1"]);
        f.fsck(&dir);

        // New history comes filtered too, into the partial clone.
        f.git(&dir, &["checkout", "-q", "main"]);
        f.commit(10 + version.parse::<usize>().unwrap());
        f.git(&dir, &["pull", "-q"]);
        assert_eq!(
            f.git(&dir, &["rev-parse", "HEAD"]),
            f.git(&f.source, &["rev-parse", "HEAD"])
        );
        f.fsck(&dir);
    }
}

#[test]
fn refused_filters_get_git_errors() {
    let f = Fixture::new();
    // Without uploadpack.allowFilter the capability is not offered: the
    // client warns and clones everything.
    f.git(&f.source, &["config", "uploadpack.allowFilter", "false"]);
    for version in VERSIONS {
        let dir = f.root.join(format!("unfiltered-v{version}"));
        let out = f.remote(
            &f.root,
            version,
            true,
            &[
                "clone",
                "--bare",
                "--filter=blob:none",
                &f.url(),
                dir.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("filtering not recognized by server, ignoring"),
            "v{version}: {}",
            stderr(&out)
        );
        assert_eq!(f.objects(&dir), f.objects(&f.source));
    }

    f.git(&f.source, &["config", "uploadpack.allowFilter", "true"]);
    f.git(&f.source, &["config", "uploadpackfilter.allow", "false"]);
    f.git(
        &f.source,
        &["config", "uploadpackfilter.tree.maxDepth", "1"],
    );
    let cases = [
        ("--filter=blob:none", "filter 'blob:none' not supported"),
        (
            "--filter=tree:2",
            "tree filter allows max depth 1, but got 2",
        ),
    ];
    for version in VERSIONS {
        for (filter, message) in cases {
            for refstore in [true, false] {
                let dir = f.root.join(format!("refused-{version}-{refstore}"));
                let out = f.remote(
                    &f.root,
                    version,
                    refstore,
                    &["clone", "--bare", filter, &f.url(), dir.to_str().unwrap()],
                );
                assert!(!out.status.success(), "{filter} v{version}");
                // The client says it read the server's ERR packet. git's
                // own v0 server may hang up before the client has written
                // its `done`, which then dies of the closed pipe: only
                // the server's own message is sure to be there.
                let expected = match refstore || version == "2" {
                    true => format!("fatal: remote error: {message}"),
                    false => message.to_owned(),
                };
                assert!(
                    stderr(&out).contains(&expected),
                    "{filter} v{version} refstore {refstore}: {}",
                    stderr(&out)
                );
            }
        }
        // Within the limits the filter is served.
        let dir = f.clone(
            &format!("allowed-{version}"),
            version,
            true,
            &["--filter=tree:1"],
        );
        f.fsck(&dir);
    }
}

#[test]
fn wants_of_unadvertised_objects_follow_the_configuration() {
    let f = Fixture::new();
    let older = f.git(&f.source, &["rev-parse", "HEAD~2"]).trim().to_owned();
    let blob = f
        .git(&f.source, &["rev-parse", "HEAD~3:small0"])
        .trim()
        .to_owned();
    let fetch = |version: &str, refstore: bool, id: &str| {
        let dir = f.root.join(format!("want-{version}-{refstore}-{id}"));
        f.git(&f.root, &["init", "-q", "--bare", dir.to_str().unwrap()]);
        f.remote(&dir, version, refstore, &["fetch", &f.url(), id])
    };
    // By default, v0 offers nothing beyond the refs; v2 serves any object.
    for id in [&older, &blob] {
        for refstore in [true, false] {
            let out = fetch("0", refstore, id);
            assert!(!out.status.success(), "v0 {id} refstore {refstore}");
            assert!(
                stderr(&out).contains(&format!(
                    "Server does not allow request for unadvertised object {id}"
                )),
                "{}",
                stderr(&out)
            );
            let out = fetch("2", refstore, id);
            assert!(out.status.success(), "v2 {id}: {}", stderr(&out));
        }
    }
    // allowReachableSHA1InWant: a commit the refs reach is served in v0.
    f.git(
        &f.source,
        &["config", "uploadpack.allowReachableSHA1InWant", "true"],
    );
    for refstore in [true, false] {
        let out = fetch("0", refstore, &older);
        assert!(
            out.status.success(),
            "refstore {refstore}: {}",
            stderr(&out)
        );
    }
    // allowAnySHA1InWant=false turns every allow-* off again.
    f.git(
        &f.source,
        &["config", "uploadpack.allowAnySHA1InWant", "false"],
    );
    for refstore in [true, false] {
        let out = fetch("0", refstore, &blob);
        assert!(!out.status.success(), "refstore {refstore}");
    }
}

impl Fixture {
    /// Adds commits with text files at several depths, one blob at two
    /// paths, one file moved, and stores sparse-checkout specifications: each as a loose
    /// blob (named by id) and in the tree of branch `patterns` (named as
    /// `patterns:<name>`), whose commit shares nothing with `main`.
    fn sparse_specs(&self, specs: &[(&str, &str)]) -> Vec<(String, String)> {
        for (path, content) in [
            ("docs/guide.txt", "guide\n"),
            ("docs/internal/notes.txt", "notes\n"),
            ("docs/internal/plan.md", "plan\n"),
            ("a/b/c.txt", "c\n"),
            ("copy/mid", "same\n"),
            ("a/same", "same\n"),
        ] {
            let file = self.source.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, content).unwrap();
        }
        self.git(&self.source, &["add", "-A"]);
        self.git(&self.source, &["commit", "-q", "-m", "text files"]);
        // A file moved into copy/: the newer path is met first.
        std::fs::write(self.source.join("draft"), "draft\n").unwrap();
        self.git(&self.source, &["add", "-A"]);
        self.git(&self.source, &["commit", "-q", "-m", "draft"]);
        self.git(&self.source, &["mv", "draft", "copy/draft"]);
        self.git(&self.source, &["commit", "-q", "-m", "draft moved"]);
        let mut tree = String::new();
        let mut named = Vec::new();
        for (name, spec) in specs {
            let file = self.root.join(name);
            std::fs::write(&file, spec).unwrap();
            let id = self.git(&self.source, &["hash-object", "-w", file.to_str().unwrap()]);
            let id = id.trim().to_owned();
            tree.push_str(&format!("100644 blob {id}\t{name}\n"));
            named.push((name.to_string(), id));
        }
        let mut mktree = std::process::Command::new("git");
        isolate(&mut mktree, &self.home)
            .arg("mktree")
            .current_dir(&self.source);
        let out = run_with_input(&mut mktree, tree.as_bytes());
        assert!(out.status.success(), "mktree: {}", stderr(&out));
        let tree_id = String::from_utf8(out.stdout).unwrap();
        let commit = self.git(
            &self.source,
            &["commit-tree", tree_id.trim(), "-m", "sparse patterns"],
        );
        self.git(
            &self.source,
            &["update-ref", "refs/heads/patterns", commit.trim()],
        );
        named
    }
}

#[test]
fn sparse_filters_send_what_git_sends() {
    let f = Fixture::new();
    let specs = f.sparse_specs(&[
        // A directory: everything below it, at any depth.
        ("dir", "a/\n"),
        // Top-level entries, without one directory.
        ("negation", "/*\n!a/\n"),
        // One file, by its whole path.
        ("nested", "a/b/large\n"),
        ("txt", "*.txt\n"),
        // A directory without what a deeper pattern excludes.
        ("within", "docs/\n!docs/internal/\ndocs/internal/*.md\n"),
        // Comments, spaces, a pattern matching a blob also met elsewhere.
        ("mixed", "# shared blob\n/copy/  \n"),
        ("empty", ""),
        ("globs", "docs/**/*.txt\n!/docs/guide.txt\n"),
        // `*` matches the root itself: everything but what is excluded.
        ("root", "*\n!*.txt\n"),
    ]);
    let all = f.objects(&f.source);
    let mut cases: Vec<Vec<String>> = specs
        .iter()
        .map(|(_, id)| vec![format!("--filter=sparse:oid={id}")])
        .collect();
    // Named by revision and path, by an abbreviated id, and combined
    // with a size limit.
    cases.push(vec!["--filter=sparse:oid=patterns:txt".to_owned()]);
    cases.push(vec![format!("--filter=sparse:oid={}", &specs[4].1[..8])]);
    cases.push(vec![
        "--filter=sparse:oid=refs/heads/patterns:dir".to_owned(),
        "--filter=blob:limit=1k".to_owned(),
    ]);
    // The blob at copy/mid is met first at a/same, where `/copy/` does
    // not include it.
    cases.push(vec![
        "--filter=sparse:oid=patterns:mixed".to_owned(),
        "--filter=blob:limit=1k".to_owned(),
    ]);
    for version in VERSIONS {
        for (n, filters) in cases.iter().enumerate() {
            let filters: Vec<&str> = filters.iter().map(String::as_str).collect();
            let ours = f.clone(
                &format!("sparse-ours-{version}-{n}"),
                version,
                true,
                &filters,
            );
            let theirs = f.clone(
                &format!("sparse-theirs-{version}-{n}"),
                version,
                false,
                &filters,
            );
            let listing = f.listing(&ours);
            assert_eq!(listing, f.listing(&theirs), "{filters:?} v{version}");
            assert_eq!(
                f.objects(&ours),
                f.objects(&theirs),
                "{filters:?} v{version}"
            );
            assert!(
                f.objects(&ours).len() < all.len(),
                "{filters:?} v{version}: nothing left out"
            );
            // Every tree is sent.
            let trees = f.git(
                &f.source,
                &[
                    "rev-list",
                    "--objects",
                    "--all",
                    "--filter=object:type=tree",
                ],
            );
            for line in trees.lines().filter(|l| !l.trim().is_empty()) {
                let id = line.split(' ').next().unwrap();
                assert!(
                    listing.iter().any(|l| l.starts_with(id)),
                    "{filters:?} v{version}: tree {id} missing"
                );
            }
        }
    }
    // `a/` sent the blobs below a/ and nothing else.
    let ours = f.root.join("sparse-ours-2-0");
    let blobs: Vec<String> = f
        .objects(&ours)
        .into_iter()
        .filter(|line| line.contains(" blob "))
        .filter_map(|line| line.split(' ').next().map(str::to_owned))
        .collect();
    assert!(!blobs.is_empty());
    for line in f.listing(&ours) {
        if let Some((id, path)) = line.split_once(' ') {
            if blobs.iter().any(|blob| blob == id) {
                assert!(path.starts_with("a/"), "a/ sent {path}");
            }
        }
    }
}

#[test]
fn sparse_filters_naming_no_blob_get_git_errors() {
    let f = Fixture::new();
    let tree = f
        .git(&f.source, &["rev-parse", "HEAD^{tree}"])
        .trim()
        .to_owned();
    let missing = "0123456789012345678901234567890123456789";
    let cases = [
        (
            "main:nonexistent".to_owned(),
            "unable to access sparse blob in 'main:nonexistent'".to_owned(),
        ),
        (
            "nobranch:file".to_owned(),
            "unable to access sparse blob in 'nobranch:file'".to_owned(),
        ),
        (
            tree.clone(),
            format!("unable to parse sparse filter data in {tree}"),
        ),
        (
            missing.to_owned(),
            format!("unable to parse sparse filter data in {missing}"),
        ),
    ];
    for version in VERSIONS {
        for (n, (spec, message)) in cases.iter().enumerate() {
            for refstore in [true, false] {
                let dir = f.root.join(format!("bad-sparse-{version}-{n}-{refstore}"));
                let out = f.remote(
                    &f.root,
                    version,
                    refstore,
                    &[
                        "clone",
                        "--bare",
                        &format!("--filter=sparse:oid={spec}"),
                        &f.url(),
                        dir.to_str().unwrap(),
                    ],
                );
                assert!(
                    !out.status.success(),
                    "{spec} v{version} refstore {refstore}"
                );
                // git's pack-objects dies with the message, relayed on the
                // side band; refstore refuses the request in an `ERR`
                // packet (its own standard error, which file:// shows
                // too, would not reach an HTTP client).
                let expected = match refstore {
                    true => format!("fatal: remote error: {message}"),
                    false => format!("remote: fatal: {message}"),
                };
                assert!(
                    stderr(&out).contains(&expected),
                    "{spec} v{version} refstore {refstore}: {}",
                    stderr(&out)
                );
            }
        }
    }

    // The configuration may forbid the filter by its name, `sparse:oid`.
    let spec = f
        .git(&f.source, &["rev-parse", "HEAD:small0"])
        .trim()
        .to_owned();
    f.git(
        &f.source,
        &["config", "uploadpackfilter.sparse:oid.allow", "false"],
    );
    for version in VERSIONS {
        for refstore in [true, false] {
            let dir = f
                .root
                .join(format!("forbidden-sparse-{version}-{refstore}"));
            let out = f.remote(
                &f.root,
                version,
                refstore,
                &[
                    "clone",
                    "--bare",
                    &format!("--filter=sparse:oid={spec}"),
                    &f.url(),
                    dir.to_str().unwrap(),
                ],
            );
            assert!(!out.status.success(), "v{version} refstore {refstore}");
            assert!(
                stderr(&out).contains("filter 'sparse:oid' not supported"),
                "v{version} refstore {refstore}: {}",
                stderr(&out)
            );
        }
    }
}

#[test]
fn sparse_clones_check_out_and_pull() {
    let f = Fixture::new();
    f.sparse_specs(&[("dir", "a/\n")]);
    f.git(
        &f.source,
        &["config", "uploadpack.allowAnySHA1InWant", "true"],
    );
    for version in VERSIONS {
        let dir = f.root.join(format!("sparse-checkout-v{version}"));
        let url = f.url();
        // The checkout fetches the blobs of HEAD the filter left out.
        f.remote_ok(
            &f.root,
            version,
            true,
            &[
                "clone",
                "-q",
                "--filter=sparse:oid=patterns:dir",
                &url,
                dir.to_str().unwrap(),
            ],
        );
        f.git(&dir, &["config", "protocol.version", version]);
        let big = std::fs::read_to_string(dir.join("big.txt")).unwrap();
        assert_eq!(big, f.git(&f.source, &["show", "HEAD:big.txt"]));
        // Later fetches carry the same filter, resolved again.
        f.commit(10 + version.parse::<usize>().unwrap());
        f.git(&dir, &["pull", "-q"]);
        assert_eq!(
            f.git(&dir, &["rev-parse", "HEAD"]),
            f.git(&f.source, &["rev-parse", "HEAD"])
        );
        let missing: Vec<String> = f
            .listing(&dir)
            .into_iter()
            .filter(|line| line.starts_with('?'))
            .collect();
        assert!(!missing.is_empty(), "v{version}: the clone is not partial");
        f.fsck(&dir);
    }
}

#[test]
fn sparse_patterns_follow_core_ignorecase() {
    let f = Fixture::new();
    let specs = f.sparse_specs(&[("upper", "A/\n*.TXT\n")]);
    f.git(&f.source, &["config", "core.ignoreCase", "true"]);
    let filter = format!("--filter=sparse:oid={}", specs[0].1);
    for version in VERSIONS {
        let ours = f.clone(&format!("case-ours-{version}"), version, true, &[&filter]);
        let theirs = f.clone(
            &format!("case-theirs-{version}"),
            version,
            false,
            &[&filter],
        );
        let listing = f.listing(&ours);
        assert_eq!(listing, f.listing(&theirs), "v{version}");
        assert!(
            listing.iter().any(|line| line.ends_with(" a/b/large")),
            "v{version}: A/ did not include a/"
        );
    }
}
