//! Giving back the resident pages of a file mapping that a long read has
//! gone through: a clone copies most of a large pack, and every page it
//! touched would otherwise stay counted against the server until the
//! request ends (hundreds of megabytes for one request). The pages stay
//! in the page cache: a later read of them faults them back in from
//! there, unchanged.

/// Drops the pages that lie wholly inside `bytes` from this process's
/// resident memory. Best effort: an error leaves them resident.
///
/// # Safety
///
/// `bytes` must lie in a read-only mapping of a file that nobody writes
/// while it is mapped (such as a pack, which git never rewrites in
/// place): its pages then read back the same when touched again.
/// Anonymous or written memory would read back as zeros.
#[allow(unsafe_code)]
pub unsafe fn release_pages(bytes: &[u8]) {
    // SAFETY: sysconf only reads a system setting.
    let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        size if size > 0 => size as usize,
        _ => return,
    };
    let start = bytes.as_ptr() as usize;
    let first = start.div_ceil(page) * page;
    let end = (start + bytes.len()) / page * page;
    if end <= first {
        return;
    }
    // SAFETY: the range is within `bytes`, page-aligned, and (by the
    // caller's promise) a read-only file mapping, whose contents
    // MADV_DONTNEED leaves as they are.
    let _ = unsafe {
        rustix::mm::madvise(
            first as *mut std::ffi::c_void,
            end - first,
            rustix::mm::Advice::LinuxDontNeed,
        )
    };
}

/// How many KiB of the mapping that starts at address `start` are resident
/// in this process, from `/proc/self/smaps` (that mapping alone); `None`
/// where the kernel does not say. For checking [`release_pages`].
pub fn mapping_resident_kib(start: usize) -> Option<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let start = format!("{start:x}-");
    let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&start));
    lines.next()?;
    lines
        .find_map(|l| l.strip_prefix("Rss:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use crate::Vfs;

    #[test]
    fn released_pages_read_back_the_same_and_leave_the_resident_set() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pack");
        let content: Vec<u8> = (0..16u32 << 20).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &content).unwrap();
        let mapped = crate::real::RealFs::new().read_mapped(&path).unwrap();
        assert_eq!(&mapped[..], &content[..]);
        let touched = super::mapping_resident_kib(mapped.as_ptr() as usize).unwrap();
        // SAFETY: a read-only mapping of a file nothing writes meanwhile.
        #[allow(unsafe_code)]
        unsafe {
            super::release_pages(&mapped)
        };
        let released = super::mapping_resident_kib(mapped.as_ptr() as usize).unwrap();
        assert!(
            touched >= 16 * 1024 && released < 1024,
            "{touched} kB resident before, {released} kB after"
        );
        assert_eq!(&mapped[..], &content[..]);
    }
}
