//! Drives the JGit interop program (`interop/jgit`), an implementation of
//! both ref formats independent of refstore and of the machine's git.
//!
//! The program is built with Maven the first time a test needs it (JGit and
//! its dependencies come from Maven Central); later calls reuse the build.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

fn project_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/jgit")
}

/// Builds the interop program once per test process and returns its classpath.
pub fn classpath() -> &'static str {
    static CLASSPATH: OnceLock<String> = OnceLock::new();
    CLASSPATH.get_or_init(|| {
        let dir = project_dir();
        let out = Command::new("mvn")
            .args(["-q", "-B", "-Dstyle.color=never", "package"])
            .current_dir(&dir)
            .output()
            .expect("cannot run mvn: install Maven and a JDK (scripts/install-deps does)");
        assert!(
            out.status.success(),
            "building interop/jgit with Maven failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let target = dir.join("target");
        format!(
            "{}:{}/*",
            target.join("jgit-refs-1.0.jar").display(),
            target.join("lib").display()
        )
    })
}

/// A `java` command that runs `class` of the interop program (the class
/// name without its package).
pub fn java(class: &str) -> Command {
    let mut cmd = Command::new("java");
    cmd.arg("-cp")
        .arg(classpath())
        .arg(format!("refstore.interop.{class}"));
    cmd
}

/// Runs `JGitRefs <args>` with `stdin`, returning stdout; panics with JGit's
/// stderr if it fails.
pub fn run(args: &[&str], stdin: &str) -> String {
    use std::io::Write;
    let mut child = java("JGitRefs")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot run java: install a JDK (scripts/install-deps does)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "JGitRefs {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("JGitRefs prints UTF-8")
}

/// JGit's view of every ref and reflog entry of the repository at `git_dir`
/// (see the format in `JGitRefs.java`).
pub fn dump(git_dir: &Path) -> String {
    run(&["dump", git_dir.to_str().unwrap()], "")
}
