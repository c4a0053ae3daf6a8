//! [`Mapped`]: the bytes of a whole file, for reading large files that are
//! only ever replaced by rename (a `packed-refs` of a million refs is tens
//! of megabytes). A file that large is mapped into memory rather than
//! copied: the pages come straight from the page cache, and a reader that
//! only binary-searches it touches a handful of them.

use std::ops::Deref;

/// Below this size a plain read costs less than setting up a mapping.
pub(crate) const MAP_THRESHOLD: u64 = 256 * 1024;

/// The contents of a file: mapped, or read into memory.
#[derive(Debug)]
pub struct Mapped {
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Owned(Vec<u8>),
    Map(Map),
}

impl Mapped {
    /// Bytes held in memory.
    pub fn owned(bytes: Vec<u8>) -> Self {
        Mapped {
            inner: Inner::Owned(bytes),
        }
    }

    /// Maps `len` bytes of the file open on `fd` read-only. Callers map
    /// only files that are replaced by rename and never written in place,
    /// as git does with `packed-refs`: a file truncated under the mapping
    /// would make reads past its new end fault.
    pub(crate) fn map(fd: &rustix::fd::OwnedFd, len: usize) -> rustix::io::Result<Self> {
        Ok(Mapped {
            inner: Inner::Map(Map::new(fd, len)?),
        })
    }
}

impl From<Vec<u8>> for Mapped {
    fn from(bytes: Vec<u8>) -> Self {
        Mapped::owned(bytes)
    }
}

impl Deref for Mapped {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.inner {
            Inner::Owned(bytes) => bytes,
            Inner::Map(map) => map.bytes(),
        }
    }
}

/// A private read-only mapping, unmapped on drop.
#[derive(Debug)]
struct Map {
    ptr: *mut std::ffi::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value; sharing or
// sending a pointer to immutable memory between threads is sound.
#[allow(unsafe_code)]
unsafe impl Send for Map {}
#[allow(unsafe_code)]
unsafe impl Sync for Map {}

#[allow(unsafe_code)]
impl Map {
    fn new(fd: &rustix::fd::OwnedFd, len: usize) -> rustix::io::Result<Self> {
        use rustix::mm::{mmap, MapFlags, ProtFlags};
        // SAFETY: a fresh mapping at an address the kernel picks aliases no
        // Rust memory; it stays valid until `munmap` in `drop`.
        let ptr = unsafe {
            mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ,
                MapFlags::PRIVATE,
                fd,
                0,
            )?
        };
        Ok(Map { ptr, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes for as long as `self`
        // lives, and nothing writes through the private read-only mapping.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

#[allow(unsafe_code)]
impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly the mapping made in `new`, and no
        // slice borrowed from it outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.ptr, self.len) };
    }
}
