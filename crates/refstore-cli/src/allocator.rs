//! The C allocator's settings for long-running commands.
//!
//! glibc's malloc gives threads arenas of their own, up to eight per core,
//! and keeps what each arena once held. `refstore serve` runs services on
//! a pool of threads (one per `--workers`), so a server that has been busy
//! holds about one arena of freed memory per pool thread: its peak
//! resident memory under the soak benchmark rose by a third for nothing.
//! Two arenas are plenty when the threads spend their time in zlib and
//! system calls rather than in malloc, and keep the peak at what one
//! thread per request needed.

/// Caps glibc's malloc arenas at two unless `MALLOC_ARENA_MAX` says
/// otherwise (glibc reads it itself). Call before starting threads.
pub fn few_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only changes a parameter of the allocator; it is
        // called before the server starts any thread, and glibc ignores a
        // value it cannot apply (the return value says so; nothing to do
        // then but go on with the defaults).
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}
