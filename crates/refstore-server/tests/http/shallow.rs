//! Shallow clones and fetches over HTTP (one
//! stateless request per round, the shallow lines repeated in each), in
//! protocol v0 and v2, compared with the same commands against git's own
//! upload-pack over file://.

use crate::support::*;
use std::path::{Path, PathBuf};

/// A bare repository below `root` with a merge in its history.
fn setup(home: &Path, root: &Path) -> PathBuf {
    let work = Work::init(home, "work");
    let commit = |name: &str| {
        work.commit_file(name, format!("{name}\n"));
    };
    for name in ["a", "b", "c"] {
        commit(name);
    }
    work.git(&["checkout", "-q", "-b", "side", "HEAD~1"]);
    commit("s1");
    commit("s2");
    work.git(&["checkout", "-q", "main"]);
    commit("d");
    work.git(&["merge", "-q", "--no-edit", "side"]);
    commit("e");
    let served = root.join("proj.git");
    work.bare_clone(&served);
    served
}

/// The commits and the shallow boundary of a clone.
fn state(home: &Path, repo: &Path) -> (Vec<String>, Vec<String>) {
    let sorted = |text: String| {
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        lines.sort();
        lines
    };
    let commits = sorted(git_ok(home, repo, &["rev-list", "--all"]));
    let shallow = std::fs::read_to_string(repo.join(".git/shallow")).unwrap_or_default();
    (commits, sorted(shallow))
}

#[test]
fn shallow_clone_deepen_and_unshallow_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let served = setup(home, &root);
    let server = Serve::new(&root).start();
    let file_url = format!("file://{}", served.display());

    for version in ["0", "2"] {
        let protocol = format!("protocol.version={version}");
        let ours = home.join(format!("ours-v{version}"));
        let theirs = home.join(format!("theirs-v{version}"));
        for (url, dir) in [(server.url("proj.git"), &ours), (file_url.clone(), &theirs)] {
            let o = git_net(
                home,
                home,
                &[
                    "-c",
                    &protocol,
                    "clone",
                    "-q",
                    "--depth",
                    "1",
                    &url,
                    dir.to_str().unwrap(),
                ],
            );
            assert!(o.status.success(), "clone v{version}: {}", stderr(&o));
        }
        assert_eq!(state(home, &ours), state(home, &theirs), "clone v{version}");
        assert_eq!(state(home, &ours).1.len(), 1, "clone v{version}");

        for args in [
            &["fetch", "-q", "--deepen", "2"][..],
            &["fetch", "-q", "--unshallow"],
        ] {
            for dir in [&ours, &theirs] {
                let mut full = vec!["-c", &protocol];
                full.extend_from_slice(args);
                let o = git_net(home, dir, &full);
                assert!(o.status.success(), "{args:?} v{version}: {}", stderr(&o));
            }
            assert_eq!(
                state(home, &ours),
                state(home, &theirs),
                "{args:?} v{version}"
            );
            git_ok(home, &ours, &["fsck", "--no-progress", "--no-dangling"]);
        }
        assert!(!ours.join(".git/shallow").exists(), "v{version}");
    }
}
