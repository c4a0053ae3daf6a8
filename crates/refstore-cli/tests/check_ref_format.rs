//! `refstore check-ref-format` answers like `git check-ref-format`: exit
//! codes, `--normalize` output, `--branch` errors.

mod support;
use support::*;

#[test]
fn agrees_with_git_on_a_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path(), tmp.path());
    let cases: &[&[&str]] = &[
        &["refs/heads/main"],
        &["main"],
        &["--allow-onelevel", "main"],
        &["--allow-onelevel", "--no-allow-onelevel", "main"],
        &["refs/heads/a..b"],
        &["--normalize", "//refs///heads/x"],
        &["--print", "refs//x"],
        &["--normalize", "refs/heads/x/"],
        &["--refspec-pattern", "refs/*/x"],
        &["--refspec-pattern", "refs/*/x*"],
        &["refs/heads/@{x}"],
        &["@"],
        &["--branch", "feature/x"],
        &["--branch", "-x"],
        &["--branch", "HEAD"],
        &["--branch", "a..b"],
        &["-x"],
        &[],
        &["a", "b"],
    ];
    for args in cases {
        let full: Vec<&str> = ["check-ref-format"]
            .iter()
            .chain(args.iter())
            .copied()
            .collect();
        assert_agrees(home, dir, &full, false);
    }
}
