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
//! the dynamic loader applies the executable's 25,000 relative relocations
//! at every start, writing to the pages that hold them. Measured here
//! (`refstore --version`, fastest of 500 runs): 0.9 ms linked `-no-pie`,
//! 1.3 ms as a PIE. Packing the relocations (`-z pack-relative-relocs`,
//! DT_RELR: 7 KB instead of 600 KB of table) did not make it faster, since
//! the same pages are still written, and it makes the executable need
//! glibc 2.36 or later; it is used only when `REFSTORE_PACK_RELATIVE_RELOCS=1`
//! at build time.
//!
//! Independently, Rust's standard library unwinds panics with libgcc's
//! unwinder, by default the shared `libgcc_s.so.1`, whose loading and
//! constructor (a dozen `cpuid` probes, each a trap to the hypervisor on a
//! virtual machine) cost start-up time; the same unwinder is linked in
//! from `libgcc_eh.a` instead, so panics unwind and backtraces print as
//! before without that library.

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

/// Whether to pack relative relocations: only when
/// `REFSTORE_PACK_RELATIVE_RELOCS` is `1` (it needs binutils 2.38 to link
/// and glibc 2.36 to run).
fn pack_relative_relocs() -> bool {
    std::env::var("REFSTORE_PACK_RELATIVE_RELOCS").as_deref() == Ok("1")
}
