//! Targets for the reftable format: whole tables as found on disk, their
//! blocks behind a repaired footer, and `tables.list`.

use crate::checks::check_message;
use refstore_refs::reftable::{
    tables_list, LogRecord, Merged, RefRecord, Table, Version, WriteOptions, Writer,
};
use refstore_refs::ObjectFormat;

/// Records a table yields to a reader before giving up: a table of `n`
/// bytes cannot hold more than about `n` records, so more means a loop.
const RECORDS_PER_BYTE: usize = 1;

/// A table file as read from disk: header, CRC-checked footer, then every
/// read the stack does (iterate refs and logs, seek, look up by name and by
/// object id). Damaged tables give errors, never panics or endless
/// iteration.
pub fn reftable_table(data: &[u8]) {
    read_table(data.to_vec());
}

/// The blocks of a table: the input is a table whose footer is repaired
/// (header repeated, CRC recomputed) so that mutations reach the blocks,
/// records and indexes behind it. Round trip: a table that reads without
/// error, written again by refstore's writer, reads back the same records.
pub fn reftable_blocks(data: &[u8]) {
    let mut bytes = data.to_vec();
    repair_footer(&mut bytes);
    if let Some((table, refs, logs)) = read_table(bytes) {
        rewrite(&table, &refs, &logs);
    }
}

/// `tables.list`. Round trip: the names parsed format to the input.
pub fn tables_list(data: &[u8]) {
    match tables_list::parse(data) {
        Ok(names) => assert_eq!(tables_list::format(&names), data),
        Err(e) => check_message(&e.to_string()),
    }
}

/// Makes the footer repeat the header and carry the right CRC, when the
/// input is long enough to have both.
fn repair_footer(bytes: &mut [u8]) {
    let (header_len, footer_len) = match bytes.get(4) {
        Some(1) => (24, 68),
        Some(2) => (28, 72),
        _ => return,
    };
    if bytes.len() < header_len + footer_len {
        return;
    }
    let footer = bytes.len() - footer_len;
    bytes.copy_within(..header_len, footer);
    let crc = crc32fast::hash(&bytes[footer..bytes.len() - 4]);
    let end = bytes.len();
    bytes[end - 4..].copy_from_slice(&crc.to_be_bytes());
}

/// Opens and reads a whole table; its records when every read succeeds.
fn read_table(bytes: Vec<u8>) -> Option<(Table, Vec<RefRecord>, Vec<LogRecord>)> {
    let limit = bytes.len() * RECORDS_PER_BYTE + 16;
    let table = match Table::new(bytes) {
        Ok(table) => table,
        Err(e) => {
            check_message(&e.to_string());
            return None;
        }
    };
    let refs = collect(table.refs(), limit, "ref");
    let logs = collect(table.logs(), limit, "log");
    let mut names: Vec<Vec<u8>> = vec![b"".to_vec(), b"HEAD".to_vec(), b"refs/heads/".to_vec()];
    let mut ids = vec![table.object_format().null_id()];
    // The first, middle and last refs: enough to reach every kind of
    // seek while keeping each run short.
    if let Some(refs) = &refs {
        for record in [refs.first(), refs.get(refs.len() / 2), refs.last()]
            .into_iter()
            .flatten()
        {
            names.push(record.name.clone());
            ids.extend(record.value.object_ids().copied());
        }
    }
    for name in &names {
        report(table.ref_record(name));
        if let Some(iter) = report(table.seek_refs(name)) {
            for record in iter.take(4) {
                report(record);
            }
        }
        if let Some(iter) = report(table.logs_for(name)) {
            for record in iter.take(limit) {
                report(record);
            }
        }
    }
    for id in &ids {
        report(table.refs_for_object(id));
    }
    let tables = [table];
    let merged = Merged::new(&tables);
    report(merged.refs().map(|iter| iter.take(limit).for_each(drop)));
    report(merged.logs().map(|iter| iter.take(limit).for_each(drop)));
    let [table] = tables;
    Some((table, refs?, logs?))
}

/// Every record of an iterator, or `None` at the first error; fails the
/// target if the iterator does not end within `limit` records.
fn collect<T>(
    iter: refstore_refs::reftable::Result<impl Iterator<Item = refstore_refs::reftable::Result<T>>>,
    limit: usize,
    what: &str,
) -> Option<Vec<T>> {
    let mut records = Vec::new();
    for record in report(iter)? {
        records.push(report(record)?);
        assert!(
            records.len() <= limit,
            "more {what} records than the table has bytes: a loop"
        );
    }
    Some(records)
}

/// The value, or `None` after checking that the error says something.
fn report<T>(result: refstore_refs::reftable::Result<T>) -> Option<T> {
    result.map_err(|e| check_message(&e.to_string())).ok()
}

/// Writes `refs` and `logs` into a new table and checks it reads back the
/// same. Records the writer refuses (out of order, out of the update
/// range, ...) end the check: only readable tables of valid records must
/// round-trip.
fn rewrite(table: &Table, refs: &[RefRecord], logs: &[LogRecord]) {
    let version = table.version();
    let options = WriteOptions {
        version,
        ..WriteOptions::default()
    };
    let Ok(mut writer) = Writer::new(options, table.min_update_index(), table.max_update_index())
    else {
        return;
    };
    for record in refs {
        if writer.add_ref(record).is_err() {
            return;
        }
    }
    for record in logs {
        if writer.add_log(record).is_err() {
            return;
        }
    }
    let Ok(bytes) = writer.finish() else {
        return;
    };
    let again = Table::new(bytes).expect("a table just written opens");
    assert_eq!(again.version(), version);
    assert!(matches!(
        (version, again.object_format()),
        (Version::V1, ObjectFormat::Sha1) | (Version::V2(_), _)
    ));
    let reread: Vec<RefRecord> = again
        .refs()
        .unwrap()
        .collect::<Result<_, _>>()
        .expect("the refs of a table just written read");
    assert_eq!(reread, refs, "refs differ after a rewrite");
    let reread: Vec<LogRecord> = again
        .logs()
        .unwrap()
        .collect::<Result<_, _>>()
        .expect("the logs of a table just written read");
    assert_eq!(reread, logs, "logs differ after a rewrite");
}
