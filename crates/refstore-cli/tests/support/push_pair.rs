//! A work repository and two targets pushed to alike: `ours`, served by
//! refstore's receive-pack, and `theirs`, served by git's. The receive-pack
//! tests push the same thing into both and compare what each answered and
//! kept.

use super::{git, git_ok};
use std::path::{Path, PathBuf};
use std::process::Output;

/// The repositories of a push comparison, in a temporary home.
pub struct PushPair {
    _tmp: tempfile::TempDir,
    /// The home every program runs with.
    pub home: PathBuf,
    /// The work repository pushes come from (branch `main`).
    pub src: PathBuf,
    /// The target refstore serves.
    pub ours: PathBuf,
    /// The target git serves.
    pub theirs: PathBuf,
}

impl PushPair {
    /// An empty `src` and two empty targets, made by `git init -q
    /// <target_args> -b main`.
    pub fn new(target_args: &[&str]) -> PushPair {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().to_owned();
        git_ok(&home, &home, &["init", "-q", "-b", "main", "src"]);
        for target in ["ours", "theirs"] {
            let args = [&["init", "-q"], target_args, &["-b", "main", target]].concat();
            git_ok(&home, &home, &args);
        }
        PushPair {
            src: home.join("src"),
            ours: home.join("ours"),
            theirs: home.join("theirs"),
            home,
            _tmp: tmp,
        }
    }

    /// Both targets, ours first.
    pub fn targets(&self) -> [&Path; 2] {
        [&self.ours, &self.theirs]
    }

    /// `git <args>` in `src`, which must succeed: its output.
    pub fn git(&self, args: &[&str]) -> String {
        git_ok(&self.home, &self.src, args)
    }

    /// Appends the line `message` to `src`'s `file` and commits it with
    /// that message: the new commit's id.
    pub fn commit(&self, message: &str) -> String {
        let file = self.src.join("file");
        let old = std::fs::read_to_string(&file).unwrap_or_default();
        std::fs::write(&file, format!("{old}{message}\n")).unwrap();
        self.git(&["add", "file"]);
        self.git(&["commit", "-q", "-m", message]);
        self.git(&["rev-parse", "HEAD"]).trim().to_owned()
    }

    /// Sets `key` to `value` in both targets.
    pub fn config(&self, key: &str, value: &str) {
        for target in self.targets() {
            git_ok(&self.home, target, &["config", key, value]);
        }
    }

    /// `git push --porcelain <url> <args>` from `src` into ours (through
    /// refstore's receive-pack) or theirs: git's output, and the URL it
    /// pushed to, which a comparison of the two outputs masks.
    pub fn push_to(&self, ours: bool, args: &[&str]) -> (Output, String) {
        let target = if ours { &self.ours } else { &self.theirs };
        let url = format!("file://{}", target.display());
        let receive_pack = format!(
            "--receive-pack={} receive-pack",
            env!("CARGO_BIN_EXE_refstore")
        );
        let mut all = vec!["push", "--porcelain"];
        if ours {
            all.push(&receive_pack);
        }
        all.push(&url);
        all.extend_from_slice(args);
        (git(&self.home, &self.src, &all), url)
    }
}
