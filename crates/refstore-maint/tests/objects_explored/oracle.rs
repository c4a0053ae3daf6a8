//! Judging a finished run with the machine's git, independent of
//! refstore's own readers: the repository is whole (`git fsck`: every
//! object a ref, `HEAD` or a reflog reaches is present and sound), every
//! acknowledged ref holds its value, and a fetch's pack is one
//! `git index-pack` accepts and holds everything its wants reach.

use super::actors::{Act, Answer, ZERO};
use super::repos::{git_with, scratch};
use std::collections::BTreeMap;
use std::path::Path;

/// The refs of the repository at `git_dir`, by name.
fn refs(git_dir: &Path) -> Result<BTreeMap<String, String>, String> {
    let (ok, out, err) = git_with(
        git_dir,
        &["for-each-ref", "--format=%(refname) %(objectname)"],
        b"",
    );
    if !ok {
        return Err(format!("git for-each-ref fails: {err}"));
    }
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(n, id)| (n.to_owned(), id.to_owned()))
        .collect())
}

/// Checks the repository at `git_dir` after a run in which the actors
/// did `acts` and were answered `answers` (in the same order), the refs
/// having been `initial` before.
pub fn judge(
    git_dir: &Path,
    initial: &BTreeMap<String, String>,
    acts: &[&Act],
    answers: &[Answer],
) -> Result<(), String> {
    let (ok, out, err) = git_with(git_dir, &["fsck", "--no-dangling", "--no-progress"], b"");
    if !ok {
        return Err(format!(
            "git fsck finds the repository broken:\n{}{err}",
            String::from_utf8_lossy(&out)
        ));
    }
    let mut expected = initial.clone();
    for (act, answer) in acts.iter().zip(answers) {
        match (act, answer) {
            (_, Answer::Failed(e)) => return Err(format!("{act:?} failed: {e}")),
            (Act::Push { name, new, .. }, Answer::Pushed { ok, report }) => {
                if !ok {
                    return Err(format!("the push to {name} was refused:\n{report}"));
                }
                if new == ZERO {
                    expected.remove(name);
                } else {
                    expected.insert(name.clone(), new.clone());
                }
            }
            (Act::Fetch, Answer::Fetched { refs, pack }) => fetched_whole(refs, pack)?,
            _ => {}
        }
    }
    let found = refs(git_dir)?;
    if found != expected {
        return Err(format!(
            "the refs are {found:?}, the clients were told {expected:?}"
        ));
    }
    Ok(())
}

/// A fetch's pack is valid and holds every object its wants reach:
/// indexed by `git index-pack` into an empty repository whose refs then
/// name the wants, `git fsck` finds nothing missing.
fn fetched_whole(refs: &[(String, String)], pack: &[u8]) -> Result<(), String> {
    let dir = scratch();
    let (ok, _, err) = git_with(dir.path(), &["init", "-q", "--bare", "f.git"], b"");
    assert!(ok, "git init: {err}");
    let fetched = dir.path().join("f.git");
    let (ok, _, err) = git_with(&fetched, &["index-pack", "--stdin", "--fix-thin"], pack);
    if !ok {
        return Err(format!("git index-pack refuses the fetched pack: {err}"));
    }
    let updates: String = refs
        .iter()
        .map(|(name, id)| format!("create {name} {id}\n"))
        .collect();
    let (ok, _, err) = git_with(&fetched, &["update-ref", "--stdin"], updates.as_bytes());
    if !ok {
        return Err(format!("the fetched pack lacks a wanted object: {err}"));
    }
    let (ok, out, err) = git_with(&fetched, &["fsck", "--no-dangling", "--no-progress"], b"");
    if !ok {
        return Err(format!(
            "the fetched pack lacks objects its wants reach:\n{}{err}",
            String::from_utf8_lossy(&out)
        ));
    }
    Ok(())
}
