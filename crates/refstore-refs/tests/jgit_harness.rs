//! The JGit interop program agrees with the machine's git about a files-format
//! repository, so a later disagreement about a refstore-written repository
//! points at refstore, not at the harness.

mod support;

use support::git::stdout as git;

#[test]
fn jgit_reads_refs_and_reflogs_as_git_does() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    git(dir, &["init", "-q", "-b", "main", "repo"]);
    let repo = dir.join("repo");
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "one"]);
    git(&repo, &["tag", "-a", "v1", "-m", "tag v1"]);
    git(&repo, &["branch", "topic"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "two"]);
    git(&repo, &["pack-refs", "--all"]);
    git(
        &repo,
        &["update-ref", "-m", "moved", "refs/heads/topic", "HEAD"],
    );

    let mut expected = String::from("symref HEAD refs/heads/main\n");
    for line in git(
        &repo,
        &[
            "for-each-ref",
            "--format=ref %(refname) %(objectname) %(*objectname)",
        ],
    )
    .lines()
    {
        expected.push_str(line.trim_end());
        expected.push('\n');
    }
    let dump = support::jgit::dump(&repo.join(".git"));
    let refs: String = dump
        .lines()
        .filter(|l| !l.starts_with("log "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(refs, expected);

    // Reflogs: git prints newest first; the dump lists oldest first.
    let mut git_topic_log: Vec<String> = git(
        &repo,
        &["reflog", "show", "--format=%H %gs", "refs/heads/topic"],
    )
    .lines()
    .map(str::to_owned)
    .collect();
    git_topic_log.reverse();
    let jgit_topic_log: Vec<String> = dump
        .lines()
        .filter(|l| l.starts_with("log refs/heads/topic "))
        .map(|l| {
            let (head, message) = l.split_once('\t').unwrap();
            let new_id = head.split(' ').nth(3).unwrap();
            format!("{new_id} {message}")
        })
        .collect();
    assert_eq!(jgit_topic_log, git_topic_log);
    assert!(dump.contains(" 1700000000 90 committer@example.com C O Mitter\tmoved\n"));
}
