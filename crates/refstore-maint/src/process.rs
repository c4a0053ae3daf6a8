//! Who holds something: this process's id and host name, and whether a
//! process named in a lock or `.keep` file is still alive.
//!
//! git writes `<pid> <host>` into `gc.pid` and `receive-pack <pid> on
//! <host>` into the `.keep` of a pack it is receiving; refstore writes
//! "refstore" as the host of its `.keep` files. A process can only be
//! checked on this host.

/// This machine's host name, as git writes it (`gethostname(2)`).
pub fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// True unless the process `pid` on this host is certainly gone: signal 0
/// is refused with `ESRCH` only for a process that does not exist
/// (`EPERM` means it exists under another user).
pub fn is_alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// What a `.keep` file written by a receive-pack says about its writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeepHolder {
    /// A receive-pack on this host (or refstore's), still running.
    Alive,
    /// A receive-pack on this host (or refstore's) that is gone.
    Gone,
    /// Written by something else, or on another host: not ours to judge.
    Unknown,
}

/// Reads `receive-pack <pid> on <host>` from a `.keep` file's content.
pub fn keep_holder(content: &[u8], host: &str) -> KeepHolder {
    let text = String::from_utf8_lossy(content);
    let mut words = text.split_whitespace();
    let (Some("receive-pack"), Some(pid), Some("on"), Some(on)) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return KeepHolder::Unknown;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return KeepHolder::Unknown;
    };
    if on != "refstore" && on != host {
        return KeepHolder::Unknown;
    }
    if is_alive(pid) {
        KeepHolder::Alive
    } else {
        KeepHolder::Gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_content_is_judged_by_pid_and_host() {
        let me = std::process::id();
        let host = hostname();
        let live = format!("receive-pack {me} on refstore\n");
        assert_eq!(keep_holder(live.as_bytes(), &host), KeepHolder::Alive);
        let git_live = format!("receive-pack {me} on {host}\n");
        assert_eq!(keep_holder(git_live.as_bytes(), &host), KeepHolder::Alive);
        // Process ids above the kernel's maximum never exist.
        let dead = "receive-pack 2147483000 on refstore\n";
        assert_eq!(keep_holder(dead.as_bytes(), &host), KeepHolder::Gone);
        let elsewhere = "receive-pack 2147483000 on some-other-host\n";
        assert_eq!(
            keep_holder(elsewhere.as_bytes(), &host),
            KeepHolder::Unknown
        );
        assert_eq!(keep_holder(b"", &host), KeepHolder::Unknown);
        assert_eq!(keep_holder(b"kept by hand", &host), KeepHolder::Unknown);
    }
}
