//! The `refstore` executable is linked as distributions require of a
//! daemon: position-independent (ELF type DYN) with full RELRO (a
//! `GNU_RELRO` segment and `BIND_NOW`), as `readelf` shows. The executable
//! checked is the one the tests run; `scripts/check-hardening` checks a
//! release build the same way, and that it carries no test hook.

mod support;
use std::process::Command;

fn readelf(args: &[&str]) -> String {
    let out = Command::new("readelf")
        .args(args)
        .arg(env!("CARGO_BIN_EXE_refstore"))
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
fn the_executable_is_position_independent_with_full_relro() {
    let header = readelf(&["--file-header", "--wide"]);
    let kind = header
        .lines()
        .find(|l| l.trim_start().starts_with("Type:"))
        .unwrap_or_default();
    assert!(kind.contains("DYN"), "not a PIE: {kind}");

    let segments = readelf(&["--program-headers", "--wide"]);
    assert!(
        segments.contains("GNU_RELRO"),
        "no RELRO segment:\n{segments}"
    );
    assert!(segments.contains("INTERP"), "a PIE, not a shared library");

    let dynamic = readelf(&["--dynamic", "--wide"]);
    let bind_now = dynamic.lines().any(|l| {
        (l.contains("(FLAGS)") && l.contains("BIND_NOW"))
            || (l.contains("(FLAGS_1)") && l.contains(" NOW"))
    });
    assert!(
        bind_now,
        "symbols are bound lazily (no BIND_NOW):\n{dynamic}"
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
