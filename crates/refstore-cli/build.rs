//! How the `refstore` executable is linked.
//!
//! `refstore serve` is a network daemon holding rustls, hyper and russh,
//! so the executable is hardened as distributions require of daemons:
//!
//! - **PIE** (Rust's default on Linux): the executable's image is placed
//!   at a random address like everything else in the process.
//! - **Full RELRO** (`-z relro -z now`): every symbol is bound at start,
//!   then the relocated data (the GOT included) is made read-only, so a
//!   memory-corruption bug cannot redirect a function pointer there.
//!
//! Both cost start-up time for one-shot plumbing such as `update-ref`:
//! the dynamic loader applies the executable's relative relocations at
//! every start. `-z pack-relative-relocs` (DT_RELR) stores them as
//! bitmaps, which the loader applies with far fewer memory writes; it
//! needs binutils 2.38 and a glibc of 2.36 or later where the executable
//! runs, so it is used only where the C library that links refstore is
//! that recent (`bench/run startup` measures the difference).
//!
//! Independently, Rust's standard library unwinds panics with libgcc's
//! unwinder, by default the shared `libgcc_s.so.1`, whose loading and
//! constructor (a dozen `cpuid` probes, each a trap to the hypervisor on a
//! virtual machine) cost start-up time; the same unwinder is linked in
//! from `libgcc_eh.a` instead, so panics unwind and backtraces print as
//! before without that library.

use std::process::Command;

fn main() {
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    // Properties of Linux with the GNU C library and its gcc.
    if target("CARGO_CFG_TARGET_OS") != "linux" || target("CARGO_CFG_TARGET_ENV") != "gnu" {
        return;
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=REFSTORE_PACK_RELATIVE_RELOCS");
    println!("cargo:rustc-link-arg-bins=-Wl,-z,relro,-z,now");
    if pack_relative_relocs() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rustc-link-arg-bins=-Wl,--whole-archive");
    println!("cargo:rustc-link-arg-bins=-l:libgcc_eh.a");
    println!("cargo:rustc-link-arg-bins=-Wl,--no-whole-archive");
}

/// Whether to pack relative relocations: `REFSTORE_PACK_RELATIVE_RELOCS`
/// (`0` or `1`) decides; otherwise yes when the C library linked against
/// is glibc 2.36 or later, whose loader reads them.
fn pack_relative_relocs() -> bool {
    match std::env::var("REFSTORE_PACK_RELATIVE_RELOCS").as_deref() {
        Ok("0") => return false,
        Ok("1") => return true,
        _ => {}
    }
    let Ok(output) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    // "glibc 2.36"
    let text = String::from_utf8_lossy(&output.stdout);
    let version = text.trim().strip_prefix("glibc ").unwrap_or("");
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (2, 36)
}
