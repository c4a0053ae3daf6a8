//! upload-pack on bad input and bad repositories: an error (which the
//! `refstore upload-pack` command prints after `fatal: `, exiting 128)
//! and an `ERR` packet for the client, never a panic; an object missing
//! midway is reported on side-band 3; an empty repository is cloned as
//! git clones one.

use super::stdio;
use refstore_testsupport::{git, git_ok, stderr, Git};

fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().to_owned();
    git_ok(&home, &home, &["init", "-q", "-b", "main", "repo"]);
    git_ok(
        &home,
        &home.join("repo"),
        &["commit", "-q", "--allow-empty", "-m", "one"],
    );
    (tmp, home)
}

#[test]
fn bad_input_fails_with_a_message_and_an_err_packet() {
    let (_tmp, home) = setup();
    let cases: &[(&[u8], &str, &str)] = &[
        (
            b"zzzz",
            "",
            "protocol error: bad line length character: zzzz",
        ),
        (
            b"ffff",
            "",
            "protocol error: bad line length 65535 (a packet is at most 65520 bytes, its 4-byte \
             header included)",
        ),
        (
            b"0011command=frob\n0000",
            "version=2",
            "upload-pack: invalid command 'frob'",
        ),
        (
            b"0032want 0123456789012345678901234567890123456789\n00000009done\n",
            "",
            "upload-pack: not our ref 0123456789012345678901234567890123456789",
        ),
    ];
    for (input, protocol, message) in cases {
        let how = stdio::How {
            stateless_rpc: true,
            ..stdio::How::from_git_protocol(Some(protocol))
        };
        let mut out = Vec::new();
        let result = stdio::upload_pack(&home.join("repo"), how, &mut &input[..], &mut out);
        assert_eq!(result, Err(message.to_string()));
        let out = String::from_utf8_lossy(&out);
        assert!(out.contains("ERR upload-pack: "), "{message}: {out}");
    }
}

#[test]
fn an_empty_repository_clones_as_with_git() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    git_ok(home, home, &["init", "-q", "--bare", "empty.git"]);
    let url = format!("file://{}", home.join("empty.git").display());
    let relay = stdio::relay();
    let upload_pack = format!("--upload-pack={}", relay.command("upload-pack"));
    for version in ["0", "2"] {
        let dir = format!("clone-{version}");
        let protocol = format!("protocol.version={version}");
        let out = git(
            home,
            home,
            &["-c", &protocol, "clone", &upload_pack, &url, &dir],
        );
        assert!(out.status.success(), "v{version}: {}", stderr(&out));
        assert!(stderr(&out).contains("You appear to have cloned an empty repository"));
    }
}

/// A repository that lost an object a fetch needs (a parent commit, a tree
/// or a blob, chosen by the loop) fails the fetch with the reason on
/// side-band 3, which git prints as `remote: …`, whichever protocol
/// version the client speaks; never a packet git reads as a bad band.
#[test]
fn an_object_missing_midway_is_reported_on_band_3() {
    let (_tmp, home) = setup();
    let repo = home.join("repo");
    std::fs::write(repo.join("file"), "content\n").unwrap();
    git_ok(&home, &repo, &["add", "file"]);
    git_ok(&home, &repo, &["commit", "-q", "-m", "two"]);
    git_ok(
        &home,
        &repo,
        &["commit", "-q", "--allow-empty", "-m", "three"],
    );
    let relay = stdio::relay();
    let objects = ["HEAD~1", "HEAD~1^{tree}", "HEAD~1:file"];
    for (n, object) in objects.iter().enumerate() {
        let damaged = home.join(format!("damaged-{n}"));
        git_ok(
            &home,
            &home,
            &["clone", "-q", "--bare", "repo", damaged.to_str().unwrap()],
        );
        git_ok(&home, &damaged, &["repack", "-q", "-a", "-d"]);
        let id = git_ok(&home, &damaged, &["rev-parse", object]);
        let id = id.trim();
        // Unpack everything loose but the lost object.
        let packs: Vec<_> = std::fs::read_dir(damaged.join("objects/pack"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "pack"))
            .collect();
        for pack in packs {
            let data = std::fs::read(&pack).unwrap();
            std::fs::remove_file(&pack).unwrap();
            std::fs::remove_file(pack.with_extension("idx")).unwrap();
            let _ = std::fs::remove_file(pack.with_extension("rev"));
            Git::new(&home, &damaged).ok_bytes(&["unpack-objects", "-q"], &data);
        }
        std::fs::remove_file(damaged.join("objects").join(&id[..2]).join(&id[2..])).unwrap();
        for version in ["0", "2"] {
            let target = home.join(format!("target-{n}-{version}"));
            let out = git(
                &home,
                &home,
                &[
                    "-c",
                    &format!("protocol.version={version}"),
                    "clone",
                    "--bare",
                    "--no-local",
                    &format!("--upload-pack={}", relay.command("upload-pack")),
                    damaged.to_str().unwrap(),
                    target.to_str().unwrap(),
                ],
            );
            let err = stderr(&out);
            assert!(
                !out.status.success(),
                "{object}, v{version}: the clone succeeded"
            );
            assert!(
                err.contains("remote: ") && err.contains(&id[..7]) && !err.contains("bad band"),
                "{object}, v{version}: {err}"
            );
        }
    }
}
