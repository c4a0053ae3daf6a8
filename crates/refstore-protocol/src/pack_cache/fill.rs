//! Writing an entry while its pack is computed: the pack's bytes go to
//! the entry's temporary file and to the requesting client at once
//! ([`Tee`]), and requests for the same key read the file as it grows.
//!
//! The pack is made at the pace of the requesting client, whose
//! connection the writes wait on; followers read what is written so far.
//!
//! The entry is published (renamed to its name) only once the pack's
//! trailing checksum is verified over every byte written. A client that
//! goes away does not stop the pack while other requests follow the
//! entry: it is finished for them (and kept for later ones); with nobody
//! left reading, it is abandoned. An abandoned or failed entry is marked
//! failed for its followers, which then fail rather than hand on a pack
//! cut short, and its file is removed.

use super::inflight::{Inflight, Outcome};
use super::key::CacheKey;
use super::store::{PackCache, MAGIC, TEMP_PREFIX};
use refstore_fs::VfsFile;
use refstore_hash::ObjectFormat;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;

/// The writing of one entry.
pub struct Fill {
    cache: Arc<PackCache>,
    key: CacheKey,
    entry: Arc<Inflight>,
    /// `None` once the entry is abandoned (the pack may go on for the
    /// client alone).
    file: Option<Box<dyn VfsFile>>,
    temp: PathBuf,
    /// The pack's own checksum, over all but the last `hash_len` bytes.
    checksum: Option<gix_hash::Hasher>,
    hash_len: usize,
    /// The last `hash_len` bytes seen: the trailer, once the pack ends.
    tail: Vec<u8>,
    crc: crc32fast::Hasher,
    written: u64,
    /// The requesting client stopped reading.
    client_gone: bool,
    settled: bool,
}

impl Fill {
    /// Starts the entry of `key` for a pack hashed with `hash`: its
    /// temporary file is created and locked (so that start-up cleanup of
    /// another process leaves it alone).
    pub(crate) fn start(
        cache: Arc<PackCache>,
        key: CacheKey,
        hash: ObjectFormat,
    ) -> refstore_fs::Result<(Fill, Arc<Inflight>)> {
        let temp = cache.dir.join(format!(
            "{TEMP_PREFIX}{}_{}",
            key.to_hex(),
            refstore_fs::temp::unique_suffix()
        ));
        let mut file = cache.vfs.create_exclusive(&temp)?;
        file.try_flock()?;
        let entry = Arc::new(Inflight::new(temp.clone()));
        let fill = Fill {
            cache,
            key,
            entry: entry.clone(),
            file: Some(file),
            temp,
            checksum: Some(gix_hash::hasher(hash.gix_kind())),
            hash_len: hash.raw_len(),
            tail: Vec::new(),
            crc: crc32fast::Hasher::new(),
            written: 0,
            client_gone: false,
            settled: false,
        };
        Ok((fill, entry))
    }

    /// A writer that sends every byte to `client` and into the entry.
    pub fn tee<'a>(&'a mut self, client: &'a mut dyn Write) -> Tee<'a> {
        Tee { fill: self, client }
    }

    /// True if the requesting client went away while the pack went on for
    /// the entry's followers.
    pub fn client_gone(&self) -> bool {
        self.client_gone
    }

    /// Ends the entry once the pack's computation returned: published if
    /// it holds a whole pack (its trailing checksum verified) that fits
    /// the size bound, else removed. True if published.
    pub fn finish(mut self) -> bool {
        self.settle()
    }

    fn write_entry(&mut self, buf: &[u8]) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        if let Err(e) = file.write_all(buf) {
            tracing::warn!("pack cache: writing {}: {e}", self.temp.display());
            self.abandon("the cache entry could not be written");
            return;
        }
        self.crc.update(buf);
        self.hash_all_but_tail(buf);
        self.written += buf.len() as u64;
        self.entry.advance(buf.len() as u64);
        if self.written > self.cache.bounds().max_size {
            // Too large to keep: written on only for those following it.
            self.abandon_unless_followed("the pack is larger than refstore.packCache.maxSize");
        }
    }

    /// Hashes what of `buf` (after the held-back tail) cannot be part of
    /// the trailer, and holds back the last `hash_len` bytes.
    fn hash_all_but_tail(&mut self, buf: &[u8]) {
        let Some(checksum) = self.checksum.as_mut() else {
            return;
        };
        let total = self.tail.len() + buf.len();
        let hashable = total.saturating_sub(self.hash_len);
        let from_tail = hashable.min(self.tail.len());
        checksum.update(&self.tail[..from_tail]);
        checksum.update(&buf[..hashable - from_tail]);
        self.tail.drain(..from_tail);
        self.tail.extend_from_slice(&buf[hashable - from_tail..]);
    }

    /// Whether the pack should go on without the requesting client: only
    /// while the entry is kept and someone follows it. When not, the
    /// entry is abandoned.
    fn keep_going_without_client(&mut self) -> bool {
        self.file.is_some() && self.abandon_unless_followed("the request went away")
    }

    /// Abandons the entry unless a request follows it: true if one does.
    fn abandon_unless_followed(&mut self, reason: &str) -> bool {
        let inflight = self.cache.lock_inflight();
        let mut state = self.entry.lock();
        if state.followers > 0 {
            return true;
        }
        // Under both locks: no request can start following meanwhile.
        state.outcome = Outcome::Failed(reason.to_owned());
        drop(state);
        drop(inflight);
        self.abandon(reason);
        false
    }

    /// Stops writing the entry: followers fail, the file goes.
    fn abandon(&mut self, reason: &str) {
        self.entry.end(Outcome::Failed(reason.to_owned()));
        self.unregister();
        if self.file.take().is_some() {
            let _ = self.cache.vfs.unlink(&self.temp);
        }
    }

    fn unregister(&self) {
        let mut inflight = self.cache.lock_inflight();
        if inflight
            .get(&self.key)
            .is_some_and(|e| Arc::ptr_eq(e, &self.entry))
        {
            inflight.remove(&self.key);
        }
    }

    fn settle(&mut self) -> bool {
        if std::mem::replace(&mut self.settled, true) {
            return false;
        }
        if self.file.is_none() {
            self.abandon("the cache entry was abandoned");
            return false;
        }
        let verified = self.checksum.take().is_some_and(|checksum| {
            self.tail.len() == self.hash_len
                && self.written >= 12 + self.hash_len as u64
                && checksum
                    .try_finalize()
                    .is_ok_and(|digest| digest.as_bytes() == self.tail.as_slice())
        });
        if !verified {
            self.abandon("the pack was not completed");
            return false;
        }
        // The pack is whole: followers may finish whatever becomes of the
        // entry now.
        self.entry.end(Outcome::Complete);
        let fits = self.written <= self.cache.bounds().max_size;
        let published = fits && self.publish().is_ok();
        if !published {
            self.unregister();
            if self.file.take().is_some() {
                let _ = self.cache.vfs.unlink(&self.temp);
            }
            return false;
        }
        self.unregister();
        self.cache.enforce_bounds();
        true
    }

    /// Appends the footer and renames the file to the entry's name. Not
    /// flushed: a cache entry a power failure tears fails its CRC32 and is
    /// computed again.
    fn publish(&mut self) -> refstore_fs::Result<()> {
        let mut file = self.file.take().expect("checked by the caller");
        let mut footer = Vec::with_capacity(52);
        footer.extend_from_slice(MAGIC);
        footer.extend_from_slice(&self.key.0);
        footer.extend_from_slice(&self.written.to_be_bytes());
        footer.extend_from_slice(&self.crc.clone().finalize().to_be_bytes());
        let result = file.write_all(&footer).and_then(|()| {
            self.cache
                .vfs
                .rename(&self.temp, &self.cache.entry_path(&self.key))
        });
        if result.is_err() {
            let _ = self.cache.vfs.unlink(&self.temp);
        }
        result
    }
}

impl Drop for Fill {
    fn drop(&mut self) {
        if !self.settled {
            self.settled = true;
            self.abandon("the pack was not completed");
        }
    }
}

/// Sends a pack to the requesting client and into the cache entry.
pub struct Tee<'a> {
    fill: &'a mut Fill,
    client: &'a mut dyn Write,
}

impl Write for Tee<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.fill.write_entry(buf);
        if !self.fill.client_gone {
            if let Err(e) = self.client.write_all(buf) {
                if !self.fill.keep_going_without_client() {
                    return Err(e);
                }
                tracing::debug!("pack cache: client gone ({e}); the pack goes on for followers");
                self.fill.client_gone = true;
            }
        } else if !self.fill.keep_going_without_client() {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the client and every request following it went away",
            ));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.fill.client_gone {
            return Ok(());
        }
        match self.client.flush() {
            Err(_) if self.fill.keep_going_without_client() => {
                self.fill.client_gone = true;
                Ok(())
            }
            result => result,
        }
    }
}
