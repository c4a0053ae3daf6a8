fn main() {
    println!("cargo:rustc-link-arg-bins=-no-pie");
    println!("cargo:rustc-link-arg-bins=-Wl,--whole-archive");
    println!("cargo:rustc-link-arg-bins=-l:libgcc_eh.a");
    println!("cargo:rustc-link-arg-bins=-Wl,--no-whole-archive");
}
