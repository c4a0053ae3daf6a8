//! Reading an entry to a client: a finished one (checked whole when it was
//! looked up), or one being written, followed as it grows until its
//! producer says it is complete, or failed.

use super::inflight::{Inflight, Outcome};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

/// How much is read and sent at once.
const CHUNK: usize = 256 << 10;

/// Why an entry could not be sent whole.
#[derive(Debug)]
pub enum CopyError {
    /// The client's connection failed.
    Client(io::Error),
    /// The entry could not be read, or its producer abandoned it: the
    /// client must be told the fetch failed.
    Entry(String),
}

/// A cache entry to send.
pub struct EntryReader {
    file: std::fs::File,
    source: Source,
}

enum Source {
    /// A finished entry: the pack's length.
    Finished(u64),
    /// An entry being written.
    Growing(Arc<Inflight>),
}

impl EntryReader {
    pub(crate) fn finished(file: std::fs::File, pack_len: u64) -> Self {
        EntryReader {
            file,
            source: Source::Finished(pack_len),
        }
    }

    /// A follower of `entry` (already counted among its followers).
    pub(crate) fn growing(file: std::fs::File, entry: Arc<Inflight>) -> Self {
        EntryReader {
            file,
            source: Source::Growing(entry),
        }
    }

    /// True if the entry is being written (this request follows it).
    pub fn is_following(&self) -> bool {
        matches!(self.source, Source::Growing(_))
    }

    /// Sends the whole pack to `out`; the bytes sent.
    pub fn copy_to(&mut self, out: &mut dyn Write) -> Result<u64, CopyError> {
        let mut buf = vec![0u8; CHUNK];
        let mut sent = 0u64;
        let result = loop {
            let available = match &self.source {
                Source::Finished(len) => *len,
                Source::Growing(entry) => match entry.wait_past(sent) {
                    (_, Outcome::Failed(reason)) => {
                        break Err(CopyError::Entry(format!(
                            "the pack shared with another fetch failed: {reason}"
                        )))
                    }
                    (written, _) => written,
                },
            };
            if sent == available {
                break Ok(sent);
            }
            let n = (available - sent).min(CHUNK as u64) as usize;
            if let Err(e) = self.file.read_exact_at(&mut buf[..n], sent) {
                break Err(CopyError::Entry(format!("reading the pack cache: {e}")));
            }
            if let Err(e) = out.write_all(&buf[..n]) {
                break Err(CopyError::Client(e));
            }
            sent += n as u64;
        };
        if let Some(observer) = refstore_fs::observe::observer() {
            observer.pack_cache_served(sent);
            if result.is_ok() {
                // A pack sent, as a computed one is counted: its objects
                // are in its header.
                let mut header = [0u8; 12];
                if self.file.read_exact_at(&mut header, 0).is_ok() {
                    let objects =
                        u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
                    observer.pack_sent(u64::from(objects), sent);
                }
            }
        }
        result
    }
}

impl Drop for EntryReader {
    fn drop(&mut self) {
        if let Source::Growing(entry) = &self.source {
            entry.lock().followers -= 1;
        }
    }
}
