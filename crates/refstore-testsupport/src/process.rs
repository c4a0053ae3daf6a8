//! Running a program of a test (git, refstore, JGit) and reading what it
//! printed.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `cmd` with `input` on its standard input and collects its output.
/// The input is written from another thread, so a program that answers
/// while it reads does not block on a full pipe; one that stops reading
/// early (as git does at a bad command or a refused pack) may close the
/// pipe first, which is its answer, not an error here.
pub fn run_with_input(cmd: &mut Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", cmd.get_program()));
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    out
}

/// A program's standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A program's standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
