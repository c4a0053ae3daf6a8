//! How the `refstore` executable is linked, for a fast start.
//!
//! Plumbing such as `update-ref` is run once per ref by scripts and hooks,
//! and git starts in about 0.7 ms of CPU; refstore took 1.0 ms, a third of
//! a one-ref update. Two causes, both removed here:
//!
//! - **Relocations.** As a position-independent executable, refstore
//!   carries about 25,000 relative relocations (vtables and static tables of
//!   its dependencies), which the dynamic loader applies at every start,
//!   writing to some 150 pages of its own: about 0.35 ms. Linked at a fixed
//!   address (`-no-pie`), the linker resolves them once. Shared libraries,
//!   the heap and the stacks are still placed at random.
//! - **`libgcc_s`.** Rust's standard library unwinds panics with libgcc's
//!   unwinder, by default the shared `libgcc_s.so.1`. Loading it costs a
//!   library lookup and mapping, and its constructor probes the processor
//!   with a dozen `cpuid` instructions, each a trap to the hypervisor on a
//!   virtual machine (3.5 µs apiece here). The same unwinder is linked in
//!   from `libgcc_eh.a` instead, so the library is not needed at all;
//!   panics unwind and backtraces print as before.

fn main() {
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    // Both are properties of Linux with the GNU C library and its gcc.
    if target("CARGO_CFG_TARGET_OS") != "linux" || target("CARGO_CFG_TARGET_ENV") != "gnu" {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-no-pie");
    println!("cargo:rustc-link-arg-bins=-Wl,--whole-archive");
    println!("cargo:rustc-link-arg-bins=-l:libgcc_eh.a");
    println!("cargo:rustc-link-arg-bins=-Wl,--no-whole-archive");
}
