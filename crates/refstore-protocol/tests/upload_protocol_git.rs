//! upload-pack's answers compared byte for byte with git's own
//! `git upload-pack` on the same repository and the same request: the v0
//! advertisement, v0 acknowledgements in every multi_ack mode, v2 ls-refs
//! and v2 acknowledgments; and packs checked by git's index-pack.

use refstore_fs::real::RealFs;
use refstore_protocol::pkt_line::sideband::SidebandReader;
use refstore_protocol::pkt_line::{Dialect, Packet, PacketReader};
use refstore_protocol::upload_pack::{upload_pack, Options};
use refstore_protocol::{ProtocolVersion, Repository};
use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

mod support;
use support::{git_ok as git, git_with, v2_pack};

/// A repository: main with five commits in a subdirectory tree, a side
/// branch, an annotated tag on main~2, a tag of that tag, a lightweight tag.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    git(path, &["init", "-q", "-b", "main"]);
    std::fs::create_dir(path.join("sub")).unwrap();
    for n in 0..5 {
        std::fs::write(path.join("sub/file"), format!("content {n}\n")).unwrap();
        std::fs::write(path.join(format!("top{n}")), format!("top {n}\n")).unwrap();
        git(path, &["add", "-A"]);
        git(path, &["commit", "-q", "-m", &format!("commit {n}")]);
        if n == 2 {
            git(path, &["tag", "-a", "-m", "annotated", "v1.0"]);
            git(path, &["tag", "-a", "-m", "nested", "v1.0-nested", "v1.0"]);
            git(path, &["branch", "side"]);
        }
    }
    git(path, &["tag", "light"]);
    dir
}

/// Our answer to `input`.
fn ours(dir: &Path, options: Options, input: &[u8]) -> Vec<u8> {
    let repo = refstore_repo::Repository::open(Arc::new(RealFs::new()), dir, &[])
        .and_then(Repository::serve)
        .unwrap();
    let mut output = Vec::new();
    upload_pack(&repo, &options, &mut &input[..], &mut output).unwrap();
    output
}

/// git's answer to `input`, run with `args` and protocol `version`.
fn theirs(dir: &Path, version: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    let mut full = vec!["upload-pack"];
    full.extend_from_slice(args);
    full.push(".");
    let protocol = format!("version={version}");
    git_with(dir, &full, &[("GIT_PROTOCOL", &protocol)], input).stdout
}

fn stateless(version: ProtocolVersion) -> Options {
    Options {
        stateless_rpc: true,
        advertise_refs: false,
        version,
    }
}

/// Frames `lines` as pkt-lines (`None` is a flush-pkt, `Some("")` never
/// occurs); `"0001"` is a delim-pkt.
fn packets(lines: &[Option<&str>]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        match line {
            None => out.extend_from_slice(b"0000"),
            Some("0001") => out.extend_from_slice(b"0001"),
            Some(text) => {
                out.extend_from_slice(format!("{:04x}", text.len() + 5).as_bytes());
                out.extend_from_slice(text.as_bytes());
                out.push(b'\n');
            }
        }
    }
    out
}

/// The packets of `bytes` as text lines (`"0000"` etc. for special ones),
/// stopping after a line equal to `until`.
fn lines(bytes: &[u8], dialect: Dialect, until: Option<&str>) -> Vec<String> {
    let mut reader = PacketReader::new(bytes, dialect).fail_on_err_packets(false);
    let mut out = Vec::new();
    while let Some(packet) = reader.read_text().unwrap() {
        let line = match packet {
            Packet::Data(data) => String::from_utf8_lossy(data).into_owned(),
            Packet::Flush => "0000".to_owned(),
            Packet::Delim => "0001".to_owned(),
            Packet::ResponseEnd => "0002".to_owned(),
        };
        let stop = until == Some(line.as_str());
        out.push(line);
        if stop {
            break;
        }
    }
    out
}

/// Splits the capability list off the first advertised line.
fn split_capabilities(mut lines: Vec<String>) -> (Vec<String>, BTreeSet<String>) {
    let (first, capabilities) = lines[0].split_once('\0').expect("capabilities after NUL");
    let capabilities = capabilities
        .split(' ')
        .filter(|c| !c.starts_with("agent="))
        .map(str::to_owned)
        .collect();
    lines[0] = first.to_owned();
    (lines, capabilities)
}

#[test]
fn v0_and_v1_advertisements_match_git() {
    let repo = repository();
    for (version, name) in [(ProtocolVersion::V0, "0"), (ProtocolVersion::V1, "1")] {
        let options = Options {
            stateless_rpc: false,
            advertise_refs: true,
            version,
        };
        let mut ours = lines(&ours(repo.path(), options, b""), Dialect::V0, None);
        let mut theirs = lines(
            &theirs(repo.path(), name, &["--advertise-refs"], b""),
            Dialect::V0,
            None,
        );
        if version == ProtocolVersion::V1 {
            assert_eq!(ours.remove(0), "version 1");
            assert_eq!(theirs.remove(0), "version 1");
        }
        let (ours, our_capabilities) = split_capabilities(ours);
        let (theirs, their_capabilities) = split_capabilities(theirs);
        assert_eq!(ours, theirs);
        assert!(ours.iter().any(|l| l.ends_with("refs/tags/v1.0-nested^{}")));
        // Everything offered is offered by git too, except that reachable
        // objects may be wanted without configuration.
        let missing: Vec<_> = our_capabilities
            .difference(&their_capabilities)
            .filter(|c| !c.starts_with("allow-"))
            .collect();
        assert!(missing.is_empty(), "{missing:?}");
        assert!(our_capabilities.contains("symref=HEAD:refs/heads/main"));
    }
}

#[test]
fn an_empty_repository_advertises_capabilities_alone() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "--bare", "-b", "main"]);
    let options = Options {
        advertise_refs: true,
        ..Options::default()
    };
    let ours = lines(&ours(dir.path(), options, b""), Dialect::V0, None);
    let theirs = lines(
        &theirs(dir.path(), "0", &["--advertise-refs"], b""),
        Dialect::V0,
        None,
    );
    // git before 2.41 sends a bare flush-pkt here; later versions send the
    // capabilities on a "capabilities^{}" line, as this server does.
    if theirs != ["0000"] {
        assert_eq!(
            split_capabilities(ours.clone()).0,
            split_capabilities(theirs).0
        );
    }
    let (ours, capabilities) = split_capabilities(ours);
    assert_eq!(
        ours,
        [
            "0000000000000000000000000000000000000000 capabilities^{}",
            "0000"
        ]
    );
    assert!(capabilities.contains("object-format=sha1"));
}

#[test]
fn v0_acknowledgements_match_git_in_every_mode() {
    let repo = repository();
    let path = repo.path();
    let main = git(path, &["rev-parse", "main"]);
    let old = git(path, &["rev-parse", "main~3"]);
    let unknown = "1234567890123456789012345678901234567890";
    for mode in ["multi_ack_detailed", "multi_ack", ""] {
        for haves in [
            vec![&old[..]],
            vec![unknown],
            vec![unknown, &old],
            vec![&old, unknown],
        ] {
            let want = format!("want {main} {mode} side-band-64k ofs-delta")
                .trim_end()
                .to_owned();
            let mut request = vec![Some(want.as_str()), None];
            let have_lines: Vec<String> = haves.iter().map(|h| format!("have {h}")).collect();
            request.extend(have_lines.iter().map(|h| Some(h.as_str())));
            request.push(None);
            let input = packets(&request);
            let ours = ours(path, stateless(ProtocolVersion::V0), &input);
            let theirs = theirs(path, "0", &["--stateless-rpc"], &input);
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&theirs),
                "mode {mode:?}, haves {haves:?}"
            );
        }
    }
}

#[test]
fn v2_capabilities_and_ls_refs_match_git() {
    let repo = repository();
    let path = repo.path();
    let advertise = Options {
        stateless_rpc: false,
        advertise_refs: true,
        version: ProtocolVersion::V2,
    };
    let ours_caps = lines(&ours(path, advertise, b""), Dialect::V2, None);
    assert_eq!(ours_caps[0], "version 2");
    assert!(ours_caps.contains(&"ls-refs=unborn".to_owned()));
    assert!(ours_caps.contains(&"object-format=sha1".to_owned()));

    let argument_sets: &[&[&str]] = &[
        &[],
        &["peel"],
        &["symrefs"],
        &["peel", "symrefs", "unborn"],
        &["ref-prefix refs/tags/"],
        &["symrefs", "ref-prefix HEAD", "ref-prefix refs/heads/ma"],
    ];
    for arguments in argument_sets {
        let mut request = vec![
            Some("command=ls-refs"),
            Some("object-format=sha1"),
            Some("0001"),
        ];
        request.extend(arguments.iter().map(|a| Some(*a)));
        request.push(None);
        let input = packets(&request);
        let ours = ours(path, stateless(ProtocolVersion::V2), &input);
        let theirs = theirs(path, "2", &["--stateless-rpc"], &input);
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs),
            "{arguments:?}"
        );
    }
}

#[test]
fn v2_unborn_head_matches_git() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "--bare", "-b", "trunk"]);
    let input = packets(&[
        Some("command=ls-refs"),
        Some("0001"),
        Some("symrefs"),
        Some("unborn"),
        None,
    ]);
    let ours = ours(dir.path(), stateless(ProtocolVersion::V2), &input);
    let theirs = theirs(dir.path(), "2", &["--stateless-rpc"], &input);
    assert_eq!(ours, theirs);
    assert_eq!(
        lines(&ours, Dialect::V2, None),
        ["unborn HEAD symref-target:refs/heads/trunk", "0000"]
    );
}

#[test]
fn v2_acknowledgments_match_git() {
    let repo = repository();
    let path = repo.path();
    let main = git(path, &["rev-parse", "main"]);
    let old = git(path, &["rev-parse", "main~3"]);
    let unknown = "1234567890123456789012345678901234567890";
    for haves in [vec![unknown], vec![&old[..]], vec![unknown, &old]] {
        let want = format!("want {main}");
        let mut request = vec![Some("command=fetch"), Some("0001"), Some(want.as_str())];
        let have_lines: Vec<String> = haves.iter().map(|h| format!("have {h}")).collect();
        request.extend(have_lines.iter().map(|h| Some(h.as_str())));
        request.push(None);
        let input = packets(&request);
        let ours = lines(
            &ours(path, stateless(ProtocolVersion::V2), &input),
            Dialect::V2,
            Some("packfile"),
        );
        let theirs = lines(
            &theirs(path, "2", &["--stateless-rpc"], &input),
            Dialect::V2,
            Some("packfile"),
        );
        assert_eq!(ours, theirs, "haves {haves:?}");
    }
}

/// The ids of the objects in `pack`, as git's index-pack reads them.
fn pack_objects(pack: &[u8]) -> BTreeSet<String> {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "--bare"]);
    let out = git_with(dir.path(), &["index-pack", "--stdin"], &[], pack);
    assert!(
        out.status.success(),
        "index-pack: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listing = git_with(
        dir.path(),
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname)",
        ],
        &[],
        b"",
    );
    String::from_utf8(listing.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn packs_hold_exactly_what_git_would_list() {
    let repo = repository();
    let path = repo.path();
    let rev_list = |args: &[&str]| -> BTreeSet<String> {
        let mut full = vec!["rev-list", "--objects"];
        full.extend_from_slice(args);
        git(path, &full)
            .lines()
            .map(|l| l.split(' ').next().unwrap().to_owned())
            .collect()
    };
    let main = git(path, &["rev-parse", "main"]);
    let old = git(path, &["rev-parse", "main~2"]);
    let tag = git(path, &["rev-parse", "v1.0"]);

    // A clone of main.
    let input = packets(&[
        Some("command=fetch"),
        Some("0001"),
        Some(&format!("want {main}")),
        Some("done"),
        None,
    ]);
    let pack = v2_pack(&ours(path, stateless(ProtocolVersion::V2), &input));
    assert_eq!(pack_objects(&pack), rev_list(&["main"]));

    // An update from main~2, tags that point into it included.
    let input = packets(&[
        Some("command=fetch"),
        Some("0001"),
        Some("include-tag"),
        Some(&format!("want {main}")),
        Some(&format!("have {old}")),
        Some("done"),
        None,
    ]);
    let pack = v2_pack(&ours(path, stateless(ProtocolVersion::V2), &input));
    let mut expected = rev_list(&["main", &format!("^{old}")]);
    assert!(!expected.contains(&tag));
    // v1.0 points at main~2, which the client has; only tags whose
    // target is in the pack are added.
    assert_eq!(pack_objects(&pack), expected);

    // Wanting the tag itself brings the tag and its history.
    let input = packets(&[
        Some("command=fetch"),
        Some("0001"),
        Some(&format!("want {tag}")),
        Some("done"),
        None,
    ]);
    let pack = v2_pack(&ours(path, stateless(ProtocolVersion::V2), &input));
    expected = rev_list(&["v1.0"]);
    expected.insert(tag);
    assert_eq!(pack_objects(&pack), expected);
}

#[test]
fn include_tag_sends_tags_on_sent_history() {
    let repo = repository();
    let path = repo.path();
    let side = git(path, &["rev-parse", "side"]);
    let tag = git(path, &["rev-parse", "v1.0"]);
    let nested = git(path, &["rev-parse", "v1.0-nested"]);
    for include in [true, false] {
        let mut request = vec![Some("command=fetch".to_owned()), Some("0001".to_owned())];
        if include {
            request.push(Some("include-tag".to_owned()));
        }
        request.push(Some(format!("want {side}")));
        request.push(Some("done".to_owned()));
        request.push(None);
        let request: Vec<Option<&str>> = request.iter().map(|l| l.as_deref()).collect();
        let pack = v2_pack(&ours(
            path,
            stateless(ProtocolVersion::V2),
            &packets(&request),
        ));
        let objects = pack_objects(&pack);
        assert_eq!(objects.contains(&tag), include);
        assert_eq!(objects.contains(&nested), include);
    }
}

#[test]
fn versions_of_a_file_are_sent_as_deltas_git_resolves() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    git(path, &["init", "-q", "-b", "main"]);
    let mut text = String::new();
    for commit in 0..12 {
        for line in 0..40 {
            text.push_str(&format!("commit {commit}, line {line} of a growing file\n"));
        }
        std::fs::create_dir_all(path.join("src")).unwrap();
        std::fs::write(path.join("src/growing.txt"), &text).unwrap();
        git(path, &["add", "-A"]);
        git(path, &["commit", "-q", "-m", &format!("commit {commit}")]);
    }
    let main = git(path, &["rev-parse", "main"]);
    let input = packets(&[
        Some("command=fetch"),
        Some("0001"),
        Some(&format!("want {main}")),
        Some("done"),
        None,
    ]);
    let pack = v2_pack(&ours(path, stateless(ProtocolVersion::V2), &input));
    // index-pack resolves every delta and checks the ids it computes.
    let expected: BTreeSet<String> = git(path, &["rev-list", "--objects", "main"])
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect();
    assert_eq!(pack_objects(&pack), expected);
    // Every version of the file but one is a delta, as git's verify-pack
    // sees the pack.
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "--bare"]);
    let pack_file = dir.path().join("objects/pack/received.pack");
    std::fs::write(&pack_file, &pack).unwrap();
    git(dir.path(), &["index-pack", pack_file.to_str().unwrap()]);
    let listing = git(
        dir.path(),
        &["verify-pack", "-v", pack_file.to_str().unwrap()],
    );
    let delta_blobs = listing
        .lines()
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.len() == 7 && fields[1] == "blob"
        })
        .count();
    assert_eq!(delta_blobs, 11, "{listing}");
}

#[test]
fn v0_packs_come_raw_or_in_either_side_band() {
    let repo = repository();
    let path = repo.path();
    let main = git(path, &["rev-parse", "main"]);
    let expected: BTreeSet<String> = git(path, &["rev-list", "--objects", "main"])
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect();
    for capabilities in ["", " side-band", " side-band-64k"] {
        let want = format!("want {main}{capabilities}");
        let input = packets(&[Some(want.as_str()), None, Some("done")]);
        let response = ours(path, stateless(ProtocolVersion::V0), &input);
        assert!(response.starts_with(b"0008NAK\n"), "{capabilities}");
        let rest = &response[8..];
        let pack = if capabilities.is_empty() {
            rest.to_vec()
        } else {
            let mut packets = PacketReader::new(rest, Dialect::V0);
            let mut pack = Vec::new();
            SidebandReader::new(&mut packets, |_progress: &[u8]| {})
                .read_to_end(&mut pack)
                .unwrap();
            pack
        };
        assert_eq!(pack_objects(&pack), expected, "{capabilities}");
    }
}

#[test]
fn a_bare_repository_without_a_config_file_is_served() {
    // HEAD, objects/ and refs/ make a repository for git: a bare copy
    // made without its config file is served as it is.
    let repo = repository();
    let bare = tempfile::tempdir().unwrap();
    git(
        bare.path(),
        &[
            "clone",
            "-q",
            "--bare",
            repo.path().to_str().unwrap(),
            "copy.git",
        ],
    );
    let path = bare.path().join("copy.git");
    std::fs::remove_file(path.join("config")).unwrap();
    let main = git(&path, &["rev-parse", "main"]);
    let input = packets(&[
        Some("command=fetch"),
        Some("0001"),
        Some(&format!("want {main}")),
        Some("done"),
        None,
    ]);
    let pack = v2_pack(&ours(&path, stateless(ProtocolVersion::V2), &input));
    let expected: BTreeSet<String> = git(&path, &["rev-list", "--objects", "main"])
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect();
    assert_eq!(pack_objects(&pack), expected);
}
