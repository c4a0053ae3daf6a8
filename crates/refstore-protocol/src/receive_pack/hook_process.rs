//! Repository hooks: finding a hook program and running it.
//!
//! A hook is an executable file named after its event in the hooks
//! directory (`<git-dir>/hooks`, or `core.hooksPath`); one that exists but
//! is not executable is skipped, as git skips it. This is the one place
//! refstore starts another program, and only when a repository has such a
//! file: a server without hooks stays free of child processes.
//!
//! The hook's standard output and standard error go to one pipe, read as
//! it writes, so its messages reach the caller (and a pushing client) in
//! the order written and while it runs. Its standard input is written from
//! a thread of its own, so a hook that writes much before reading cannot
//! block both sides; a hook that does not read its input at all is not an
//! error (the broken pipe is ignored, as git ignores it).

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

/// The program of hook `name` in `hooks_dir`, if there is one git would
/// run: a file (after following symbolic links) executable by this process.
pub fn find(hooks_dir: &Path, name: &str) -> Option<PathBuf> {
    let path = hooks_dir.join(name);
    let metadata = std::fs::metadata(&path).ok()?;
    if !metadata.is_file() {
        return None;
    }
    rustix::fs::access(&path, rustix::fs::Access::EXEC_OK).ok()?;
    Some(path)
}

/// How a hook is run.
#[derive(Debug, Default)]
pub struct Invocation<'a> {
    /// Its arguments.
    pub args: &'a [OsString],
    /// Variables set in its environment (on top of this process's).
    pub env: &'a [(OsString, OsString)],
    /// Variables removed from its environment.
    pub env_remove: &'a [&'a str],
    /// Its working directory.
    pub cwd: Option<&'a Path>,
    /// Its standard input (empty: it reads end of file at once).
    pub stdin: &'a [u8],
}

/// Runs the hook program at `path` and waits for it; everything it writes
/// to its standard output or standard error is handed to `output` as it
/// arrives. Fails only if the program cannot be started or waited for; its
/// exit status is the caller's to judge.
pub fn run(
    path: &Path,
    invocation: &Invocation<'_>,
    output: &mut dyn FnMut(&[u8]),
) -> io::Result<ExitStatus> {
    let (reader, writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    let mut reader = std::fs::File::from(reader);
    let mut command = Command::new(path);
    command
        .args(invocation.args)
        .stdin(Stdio::piped())
        .stdout(writer.try_clone()?)
        .stderr(writer);
    for name in invocation.env_remove {
        command.env_remove(name);
    }
    for (name, value) in invocation.env {
        command.env(name, value);
    }
    if let Some(cwd) = invocation.cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn()?;
    // The command still holds the pipe's write ends; dropping it closes
    // them here, so the reader sees end of file when the hook exits.
    drop(command);
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = invocation.stdin;
    std::thread::scope(|scope| {
        scope.spawn(move || {
            // A hook may exit without reading: not an error.
            let _ = stdin.write_all(input);
        });
        let mut buffer = [0u8; 8192];
        loop {
            match reader.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => output(&buffer[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    });
    child.wait()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, name: &str, body: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn only_executable_files_are_hooks() {
        let tmp = tempfile::tempdir().unwrap();
        script(tmp.path(), "runs", "true", 0o755);
        script(tmp.path(), "plain", "true", 0o644);
        std::fs::create_dir(tmp.path().join("dir")).unwrap();
        assert!(find(tmp.path(), "runs").is_some());
        assert!(find(tmp.path(), "plain").is_none());
        assert!(find(tmp.path(), "dir").is_none());
        assert!(find(tmp.path(), "missing").is_none());
    }

    #[test]
    fn input_arguments_environment_and_merged_output() {
        let tmp = tempfile::tempdir().unwrap();
        let hook = script(
            tmp.path(),
            "h",
            "echo \"args $*\"; echo \"env $HOOK_VAR ${HOME_GONE-unset}\" >&2; cat; pwd; exit 3",
            0o755,
        );
        let mut seen = Vec::new();
        let status = run(
            &hook,
            &Invocation {
                args: &["a".into(), "b".into()],
                env: &[("HOOK_VAR".into(), "set".into())],
                env_remove: &["HOME_GONE"],
                cwd: Some(tmp.path()),
                stdin: b"line 1\nline 2\n",
            },
            &mut |bytes| seen.extend_from_slice(bytes),
        )
        .unwrap();
        assert_eq!(status.code(), Some(3));
        let cwd = tmp.path().canonicalize().unwrap();
        assert_eq!(
            String::from_utf8(seen).unwrap(),
            format!(
                "args a b\nenv set unset\nline 1\nline 2\n{}\n",
                cwd.display()
            )
        );
    }

    #[test]
    fn a_hook_that_does_not_read_its_input() {
        let tmp = tempfile::tempdir().unwrap();
        let hook = script(tmp.path(), "h", "exit 0", 0o755);
        let input = vec![b'x'; 1 << 20];
        let status = run(
            &hook,
            &Invocation {
                stdin: &input,
                ..Invocation::default()
            },
            &mut |_| {},
        )
        .unwrap();
        assert!(status.success());
    }
}
