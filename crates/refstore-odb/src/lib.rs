//! Objects: reading through gitoxide, durable loose-object and pack ingestion,
//! and connectivity checks.
//!
//! - [`Odb`] reads objects of either format (SHA-1, SHA-256) from loose
//!   files, packs and alternates, and peels annotated tags.
//! - [`LooseWriter`] writes a batch of loose objects through the
//!   [`refstore_fs::Vfs`], durable with one flush point for the whole batch.
//! - [`store_pack`] stores a received pack with its index (completing a
//!   thin pack), durable with one flush point before it is visible.
//! - [`Quarantine`] holds a push's objects apart until it is accepted,
//!   then moves them into the repository durably.
//! - [`resolve_pack`] reads a pack stream object by object, deltas
//!   resolved (thin packs against the repository).
//! - [`IngestLimits`] say which objects are too large to hold whole
//!   (`core.bigFileThreshold`; [`LargeObject`] reads them in pieces) and
//!   how much a pack may inflate to; both pack readers keep to them.
//! - [`DeltaBaseCache`] keeps inflated delta bases for gix-pack's decoder.
//! - [`delta`] encodes and applies git's binary deltas.
//! - [`Packs`] gives stored pack entries as they are, CRC-checked, for
//!   a pack writer that copies them without inflating.
//! - [`shared`] keeps gix's store and the [`Packs`] of a repository for
//!   the requests that follow, while its pack directory is unchanged.
//! - [`BitmapIndex`] reads git's reachability bitmaps ([`PackBitmap`],
//!   compressed with [`ewah`]), and [`CommitGraph`] git's commit-graph, so
//!   counting the objects of a fetch needs no commit or tree inflated
//!   where they cover the history.
//! - [`check_connectivity`] verifies that new ref tips reach only
//!   objects the database holds, walking only what is new.
//! - [`fsck`] applies git's object checks (`receive.fsckObjects`).
//! - [`object_id`] and [`check_format`] hash and validate objects as
//!   `git hash-object` does.
//!
//! ```no_run
//! use refstore_fs::{flush::FlushMethod, real::RealFs};
//! use refstore_odb::{LooseWriter, ObjectKind, Odb};
//! use refstore_hash::ObjectFormat;
//! use std::sync::Arc;
//!
//! let objects = std::path::PathBuf::from(".git/objects");
//! let mut writer = LooseWriter::new(
//!     Arc::new(RealFs::new()),
//!     objects.clone(),
//!     ObjectFormat::Sha1,
//!     FlushMethod::Batch,
//! );
//! let id = writer.write(ObjectKind::Blob, b"hello\n")?;
//! writer.commit()?;
//!
//! let odb = Odb::open(&objects, ObjectFormat::Sha1)?;
//! assert_eq!(odb.kind(&id)?, Some(ObjectKind::Blob));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs, unsafe_code)]

mod admit;
mod base_cache;
mod bitmap;
mod bitmap_index;
mod check;
mod commit_graph;
mod connectivity;
pub mod delta;
mod entries;
mod entry_header;
mod error;
pub mod ewah;
pub mod fsck;
mod hash;
mod idx_search;
mod idx_v2;
mod kind;
mod large;
mod loose;
mod loose_header;
mod odb;
mod pack;
mod pack_index;
mod pack_list;
mod packed;
mod peel_memo;
mod quarantine;
mod rev_index;
mod set_aside;
pub mod shared;
mod unpack;

pub use admit::refuses_large_delta;
pub use base_cache::{DeltaBaseCache, Held};
pub use bitmap::PackBitmap;
pub use bitmap_index::BitmapIndex;
pub use check::{check_format, FormatError};
pub use commit_graph::{CommitGraph, GraphCommit};
pub use connectivity::{check_connectivity, Checked, ConnectivityError};
pub use entry_header::{decode_entry_header, encode_entry_header, EntryHeader};
pub use error::OdbError;
pub use hash::{object_header, object_id};
pub use kind::ObjectKind;
pub use large::{big_file_threshold, IngestLimits, LargeObject, DEFAULT_BIG_FILE_THRESHOLD};
pub use loose::{loose_object_path, LooseWriter};
pub use loose_header::{loose_kind, parse_loose_header};
pub use odb::{open_store, Odb};
pub use pack::{store_pack, PackOptions, StoredPack};
pub use packed::{PackedAt, Packs, StoredEntry, StoredKind, StoredOrder};
pub use quarantine::{Migrated, Quarantine, QUARANTINE_PREFIX};
pub use rev_index::reverse_index;
pub use unpack::{resolve_pack, ObjectData, PackObject, PackSummary};
