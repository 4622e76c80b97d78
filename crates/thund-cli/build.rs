//! Link options of the `thund` binary.

fn main() {
    // Linked as a fixed-address executable rather than a position-independent one: a PIE's
    // loader rewrites over 300,000 pointers in DataFusion's and delta-rs's read-only tables before
    // `main`, 9 ms of every command (measured: `thund --version` 12.6 ms as a PIE, 3.8 ms without).
    // The code is still compiled position-independent; only the executable's own load address is
    // fixed (shared libraries keep theirs randomised). `THUND_PIE=1` at build time keeps a PIE.
    println!("cargo:rerun-if-env-changed=THUND_PIE");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    if linux && std::env::var_os("THUND_PIE").is_none() {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
