//! Git's reftable format: tables of refs and reflogs in sorted,
//! prefix-compressed blocks, stacked newest over oldest.
//!
//! The layers, each in its own module, follow the format's concepts:
//!
//! - `varint`, `record` and the record kinds (`ref_record`, `log_record`,
//!   `obj_record`, `index_record`): how one record is encoded;
//! - `block_writer`, `block`: blocks of records with restart points
//!   (deflated for logs);
//! - `header`: the file header and the CRC-protected footer;
//! - [`Writer`]: one table from sorted refs and logs;
//! - [`Table`]: reading one table from bytes: seeks, iterators, lookups by
//!   object id;
//! - [`Merged`]: a stack of tables as one, newest wins, tombstones hide;
//! - [`tables_list`]: the stack's table of contents and table names;
//! - [`Stack`]: the tables of `$GIT_DIR/reftable` read and extended through
//!   the [`refstore_fs::Vfs`], crash-atomically;
//! - [`ReftableBackend`]: the ref store on top of the stack (reads,
//!   [`transaction`]s as one table each, [`compaction`]).
//!
//! Only the stack touches storage, and only through the Vfs; everything
//! below it works on bytes in memory.
//!
//! ```
//! use refstore_refs::reftable::{Merged, RefRecord, RefValue, Table, WriteOptions, Writer};
//! use refstore_refs::ObjectId;
//!
//! let id: ObjectId = "0123456789abcdef0123456789abcdef01234567".parse().unwrap();
//! let mut writer = Writer::new(WriteOptions::default(), 1, 1).unwrap();
//! writer
//!     .add_ref(&RefRecord {
//!         name: b"refs/heads/main".to_vec(),
//!         update_index: 1,
//!         value: RefValue::Object(id),
//!     })
//!     .unwrap();
//! let table = Table::new(writer.finish().unwrap()).unwrap();
//! let tables = [table];
//! let main = Merged::new(&tables).ref_record(b"refs/heads/main").unwrap();
//! assert_eq!(main.unwrap().value, RefValue::Object(id));
//! ```

mod backend;
mod block;
mod block_writer;
mod blocks;
pub mod compaction;
mod error;
mod header;
mod index_record;
mod log_record;
mod merged;
pub mod migrate;
mod obj_record;
mod reader;
mod record;
mod ref_record;
pub mod reflog;
mod section_iter;
mod stack;
pub mod tables_list;
pub mod transaction;
mod varint;
mod verify;
mod writer;

pub use backend::{ReftableBackend, ReftableOptions};
pub use error::{Error, Result};
pub use header::{Header, Sections, Version, MAX_BLOCK_SIZE};
pub use log_record::{LogEntry, LogRecord, LogValue};
pub use merged::{Merged, MergedLogs, MergedRefs, RefLookup};
pub use reader::{LogIter, RefIter, Table};
pub use ref_record::{RefRecord, RefValue};
pub use stack::{AddError, Records, Stack, StackError};
pub use writer::{WriteOptions, Writer};
