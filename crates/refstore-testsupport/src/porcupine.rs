//! Porcupine, an existing linearizability checker (Go, `interop/porcupine`),
//! which judges histories of reads and compare-and-swaps on refs, each ref
//! a register. See `interop/porcupine/main.go` for the history format.
//!
//! [`build`] makes the checker's executable (the Go module comes from the
//! Go module proxy the first time); it judges one history file, or, with
//! [`Batch`], a stream of histories for a whole test binary.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// Builds the checker with Go into `out` and returns the executable's
/// path.
pub fn build(out: &Path) -> PathBuf {
    let go = ["/usr/local/go/bin/go", "go"]
        .into_iter()
        .find(|g| Command::new(g).arg("version").output().is_ok())
        .expect("Go is needed to build the Porcupine checker: scripts/install-deps installs it");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/porcupine");
    let binary = out.join("porcupine-check");
    let o = Command::new(go)
        .env("GOTOOLCHAIN", "local")
        .args(["build", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "go build: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    binary
}

/// The checker running in batch mode: one history a line in, one verdict
/// a line out, so that a test judging many histories starts it once.
pub struct Batch {
    _child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    checked: usize,
}

impl Batch {
    /// Builds the checker into `out` and starts it.
    pub fn start(out: &Path) -> Batch {
        let mut child = Command::new(build(out))
            .arg("-batch")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        Batch {
            input: child.stdin.take().unwrap(),
            output: BufReader::new(child.stdout.take().unwrap()),
            _child: child,
            checked: 0,
        }
    }

    /// Whether some linearization explains `operations` (a JSON array of
    /// the checker's operations). Any answer but a verdict fails the test.
    pub fn is_linearizable(&mut self, operations: &str) -> bool {
        self.checked += 1;
        let id = self.checked;
        writeln!(self.input, r#"{{"id":"{id}","ops":{operations}}}"#).unwrap();
        self.input.flush().unwrap();
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        match line.trim_end().split_once(' ') {
            Some(("ok", _)) => true,
            Some(("illegal", _)) => false,
            _ => panic!("the checker answered {line:?}"),
        }
    }

    /// Histories judged so far.
    pub fn checked(&self) -> usize {
        self.checked
    }
}
