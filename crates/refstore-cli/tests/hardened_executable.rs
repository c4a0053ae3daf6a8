//! Both executables, `refstore` and `refstore-server`, are linked as
//! distributions require of a daemon: position-independent (ELF type DYN)
//! with full RELRO (a `GNU_RELRO` segment and `BIND_NOW`), as `readelf`
//! shows. The executables checked are the ones the tests run;
//! `scripts/check-hardening` checks a release build the same way, and that
//! it carries no test hook. The plumbing holds none of the server's code,
//! which is what keeps its start-up as fast as git's, and hands `serve` to
//! the server's executable in the same process.

mod support;
use std::process::Command;

const EXECUTABLES: [&str; 2] = [
    env!("CARGO_BIN_EXE_refstore"),
    env!("CARGO_BIN_EXE_refstore-server"),
];

fn readelf(args: &[&str], exe: &str) -> String {
    let out = Command::new("readelf")
        .args(args)
        .arg(exe)
        .output()
        .expect("cannot run readelf: install binutils");
    assert!(
        out.status.success(),
        "readelf {args:?}: {}",
        support::stderr(&out)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn the_executables_are_position_independent_with_full_relro() {
    for exe in EXECUTABLES {
        position_independent_with_full_relro(exe);
    }
}

fn position_independent_with_full_relro(exe: &str) {
    let header = readelf(&["--file-header", "--wide"], exe);
    let kind = header
        .lines()
        .find(|l| l.trim_start().starts_with("Type:"))
        .unwrap_or_default();
    assert!(kind.contains("DYN"), "{exe} is not a PIE: {kind}");

    let segments = readelf(&["--program-headers", "--wide"], exe);
    assert!(
        segments.contains("GNU_RELRO"),
        "no RELRO segment:\n{segments}"
    );
    assert!(segments.contains("INTERP"), "a PIE, not a shared library");

    let dynamic = readelf(&["--dynamic", "--wide"], exe);
    let bind_now = dynamic.lines().any(|l| {
        (l.contains("(FLAGS)") && l.contains("BIND_NOW"))
            || (l.contains("(FLAGS_1)") && l.contains(" NOW"))
    });
    assert!(
        bind_now,
        "{exe}: symbols are bound lazily (no BIND_NOW):\n{dynamic}"
    );
}

#[test]
fn the_executable_starts_with_rust_s_runtime() {
    // Rust's start-up gives a process started with its standard output
    // closed a /dev/null there, so what refstore prints cannot land in a
    // file it opens; a closed stdout must not make it fail either.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' --version >&-",
            env!("CARGO_BIN_EXE_refstore")
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", support::stderr(&out));
    let out = Command::new("readelf")
        .args(["--symbols", "--wide"])
        .arg(env!("CARGO_BIN_EXE_refstore"))
        .output()
        .expect("cannot run readelf: install binutils");
    let symbols = String::from_utf8_lossy(&out.stdout);
    assert!(
        symbols.contains("lang_start"),
        "no Rust runtime start-up (lang_start) in the executable"
    );
}

#[test]
fn the_plumbing_holds_no_server_code() {
    let symbols = |exe: &str| {
        let out = Command::new("nm")
            .args(["--demangle", exe])
            .output()
            .expect("cannot run nm: install binutils");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let server_code = ["refstore_server::", "hyper::", "rustls::", "russh::"];
    let plumbing = symbols(env!("CARGO_BIN_EXE_refstore"));
    let server = symbols(env!("CARGO_BIN_EXE_refstore-server"));
    for name in server_code {
        assert!(server.contains(name), "refstore-server has no {name} code");
        assert!(
            !plumbing.contains(name),
            "refstore holds {name} code, which only refstore-server needs"
        );
    }
}

#[test]
fn refstore_serve_runs_in_the_server_executable_in_the_same_process() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_refstore"))
        .args(["serve", "--root"])
        .arg(tmp.path())
        .args(["--listen", "127.0.0.1:0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let exe = std::path::PathBuf::from(format!("/proc/{}/exe", child.id()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let server = std::fs::canonicalize(env!("CARGO_BIN_EXE_refstore-server")).unwrap();
    let mut running = None;
    while std::time::Instant::now() < deadline {
        running = std::fs::read_link(&exe).ok();
        if running.as_deref() == Some(server.as_path()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(running.as_deref(), Some(server.as_path()));
}

#[test]
fn a_missing_server_executable_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let alone = tmp.path().join("refstore");
    std::fs::copy(env!("CARGO_BIN_EXE_refstore"), &alone).unwrap();
    let out = Command::new(&alone)
        .args(["serve", "--root", "."])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(128));
    let err = support::stderr(&out);
    assert!(
        err.starts_with("fatal: cannot run '") && err.contains("refstore-server"),
        "{err}"
    );
}
