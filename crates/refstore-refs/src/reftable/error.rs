//! The one error type of the reftable layer.
//!
//! Reading distinguishes *what* is malformed and *where* (a byte offset in
//! the table), because a damaged table must never read as a table with fewer
//! refs: every inconsistency the reader can detect becomes an error.

/// What went wrong reading or writing a reftable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The bytes are not a well-formed reftable.
    #[error("corrupt reftable: {what} (at byte {offset}); the table cannot be read, restore it from a backup or rebuild the ref store")]
    Corrupt {
        /// Byte offset in the table (or in an inflated log block) where the
        /// problem was found.
        offset: u64,
        /// What is wrong, in words.
        what: String,
    },
    /// A record is larger than a block of the configured size can hold.
    #[error("reftable entry '{key}' needs {needed} bytes but a block holds at most {block_size}; raise reftable.blockSize")]
    EntryTooBig {
        /// The record's key, lossily decoded.
        key: String,
        /// Bytes the record needs, block overhead included.
        needed: usize,
        /// The block size in use.
        block_size: u32,
    },
    /// Records were given to the writer out of order or twice.
    #[error("reftable records must be added in strictly increasing key order: '{key}' follows '{previous}'")]
    OutOfOrder {
        /// The key just added, lossily decoded.
        key: String,
        /// The key added before it.
        previous: String,
    },
    /// A writer setting or argument is outside what the format allows.
    #[error("invalid reftable writer input: {0}")]
    InvalidInput(String),
}

impl Error {
    /// Shorthand for [`Error::Corrupt`].
    pub(crate) fn corrupt(offset: impl TryInto<u64>, what: impl Into<String>) -> Self {
        Error::Corrupt {
            offset: offset.try_into().unwrap_or(u64::MAX),
            what: what.into(),
        }
    }
}

/// Result of reftable operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;
