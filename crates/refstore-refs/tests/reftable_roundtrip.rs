//! Writer -> reader round trips of random tables against an in-memory
//! model, for both format versions and many block layouts (tiny blocks
//! force multi-level indexes, obj blocks and multi-block logs).

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use refstore_refs::reftable::{
    LogEntry, LogRecord, LogValue, Merged, RefRecord, RefValue, Table, Version, WriteOptions,
    Writer,
};
use refstore_refs::{ObjectFormat, ObjectId};

fn id(format: ObjectFormat, seed: u16) -> ObjectId {
    // A few leading bytes shared by many ids, so abbreviations need care.
    let mut raw = vec![0u8; format.raw_len()];
    raw[0] = (seed % 3) as u8;
    raw[1] = (seed >> 8) as u8;
    raw[2] = seed as u8;
    raw[format.raw_len() - 1] = 0x5a;
    ObjectId::from_raw(&raw).unwrap()
}

fn name_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"HEAD".to_vec()),
        proptest::collection::vec("[abc]{1,4}", 1..4)
            .prop_map(|parts| { format!("refs/heads/{}", parts.join("/")).into_bytes() }),
        "[a-z0-9.]{1,12}".prop_map(|s| format!("refs/tags/v{s}").into_bytes()),
    ]
}

#[derive(Debug, Clone)]
enum ValueSpec {
    Deletion,
    Object(u16),
    Peeled(u16, u16),
    Symbolic(Vec<u8>),
}

fn value_strategy() -> impl Strategy<Value = ValueSpec> {
    prop_oneof![
        1 => Just(ValueSpec::Deletion),
        4 => any::<u16>().prop_map(ValueSpec::Object),
        2 => (any::<u16>(), any::<u16>()).prop_map(|(a, b)| ValueSpec::Peeled(a, b)),
        1 => name_strategy().prop_map(ValueSpec::Symbolic),
    ]
}

fn value(format: ObjectFormat, spec: &ValueSpec) -> RefValue {
    match spec {
        ValueSpec::Deletion => RefValue::Deletion,
        ValueSpec::Object(a) => RefValue::Object(id(format, *a)),
        ValueSpec::Peeled(a, b) => RefValue::Peeled {
            target: id(format, *a),
            peeled: id(format, *b),
        },
        ValueSpec::Symbolic(target) => RefValue::Symbolic(target.clone()),
    }
}

#[derive(Debug, Clone)]
struct LogSpec {
    name: Vec<u8>,
    deleted: bool,
    old: u16,
    new: u16,
    who: String,
    time: u32,
    tz: i16,
    message: String,
}

fn log_strategy() -> impl Strategy<Value = LogSpec> {
    (
        name_strategy(),
        proptest::bool::weighted(0.1),
        any::<u16>(),
        any::<u16>(),
        "[A-Za-z ]{0,10}",
        any::<u32>(),
        -720i16..=840,
        "[ -~]{0,40}",
    )
        .prop_map(
            |(name, deleted, old, new, who, time, tz, message)| LogSpec {
                name,
                deleted,
                old,
                new,
                who,
                time,
                tz,
                message,
            },
        )
}

fn log_value(format: ObjectFormat, spec: &LogSpec) -> LogValue {
    if spec.deleted {
        return LogValue::Deletion;
    }
    LogValue::Update(LogEntry {
        old_id: id(format, spec.old),
        new_id: id(format, spec.new),
        committer_name: spec.who.clone().into_bytes(),
        email: format!("{}@example.com", spec.who.len()).into_bytes(),
        time: u64::from(spec.time),
        tz_offset: spec.tz,
        message: spec.message.clone().into_bytes(),
    })
}

fn options_strategy() -> impl Strategy<Value = WriteOptions> {
    (
        prop_oneof![Just(Version::V1), Just(Version::V2(ObjectFormat::Sha256))],
        prop_oneof![256u32..400, 400u32..1500, Just(4096u32)],
        1u16..20,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(version, block_size, restart_interval, index_objects, align_blocks)| WriteOptions {
                block_size,
                restart_interval,
                index_objects,
                align_blocks,
                version,
            },
        )
}

/// One table's content, sorted as the writer wants it.
struct Content {
    refs: BTreeMap<Vec<u8>, RefRecord>,
    /// Keyed by (name, reversed update index): the table's order.
    logs: BTreeMap<(Vec<u8>, u64), LogRecord>,
}

fn write(options: WriteOptions, min: u64, max: u64, content: &Content) -> Vec<u8> {
    let mut writer = Writer::new(options, min, max).unwrap();
    for record in content.refs.values() {
        writer.add_ref(record).unwrap();
    }
    for record in content.logs.values() {
        writer.add_log(record).unwrap();
    }
    writer.finish().unwrap()
}

fn all<T>(iter: impl Iterator<Item = refstore_refs::reftable::Result<T>>) -> Vec<T> {
    iter.collect::<Result<_, _>>().unwrap()
}

fn content(
    format: ObjectFormat,
    min: u64,
    max: u64,
    refs: &[(Vec<u8>, ValueSpec, u64)],
    logs: &[(LogSpec, u64)],
) -> Content {
    let mut out = Content {
        refs: BTreeMap::new(),
        logs: BTreeMap::new(),
    };
    let span = max - min + 1;
    for (name, spec, offset) in refs {
        out.refs.insert(
            name.clone(),
            RefRecord {
                name: name.clone(),
                update_index: min + offset % span,
                value: value(format, spec),
            },
        );
    }
    for (spec, offset) in logs {
        let update_index = min + offset % span;
        out.logs.insert(
            (spec.name.clone(), u64::MAX - update_index),
            LogRecord {
                name: spec.name.clone(),
                update_index,
                value: log_value(format, spec),
            },
        );
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn one_table_round_trips(
        options in options_strategy(),
        min in 0u64..1000,
        span in 1u64..50,
        refs in proptest::collection::vec((name_strategy(), value_strategy(), any::<u64>()), 0..300),
        logs in proptest::collection::vec((log_strategy(), any::<u64>()), 0..200),
        probes in proptest::collection::vec(name_strategy(), 0..10),
    ) {
        let format = options.version.object_format();
        let max = min + span - 1;
        let model = content(format, min, max, &refs, &logs);
        let bytes = write(options, min, max, &model);
        let table = Table::new(bytes).unwrap();
        prop_assert_eq!(table.version(), options.version);
        prop_assert_eq!((table.min_update_index(), table.max_update_index()), (min, max));

        let expected: Vec<RefRecord> = model.refs.values().cloned().collect();
        prop_assert_eq!(all(table.refs().unwrap()), expected);
        for record in model.refs.values() {
            prop_assert_eq!(table.ref_record(&record.name).unwrap(), Some(record.clone()));
        }
        for probe in &probes {
            let from: Vec<RefRecord> = model.refs.range(probe.clone()..).map(|(_, r)| r.clone()).collect();
            prop_assert_eq!(all(table.seek_refs(probe).unwrap()), from);
            let got = table.ref_record(probe).unwrap();
            prop_assert_eq!(got.as_ref(), model.refs.get(probe));
        }
        // Re-seeking one iterator forwards, reading a record after some
        // seeks (the next seek then scans on from that record).
        let mut sorted_probes = probes.clone();
        sorted_probes.sort();
        let mut iter = table.refs().unwrap();
        for (i, probe) in sorted_probes.iter().enumerate() {
            iter.seek(probe).unwrap();
            if i % 2 == 0 {
                let first = iter.next().transpose().unwrap();
                prop_assert_eq!(first.as_ref(), model.refs.range(probe.clone()..).next().map(|(_, r)| r));
            }
        }
        // Re-seeking one iterator, backwards and forwards.
        let mut iter = table.refs().unwrap();
        for probe in probes.iter().rev() {
            iter.seek(probe).unwrap();
            let first = iter.next().transpose().unwrap();
            prop_assert_eq!(first.as_ref(), model.refs.range(probe.clone()..).next().map(|(_, r)| r));
        }

        let expected_logs: Vec<LogRecord> = model.logs.values().cloned().collect();
        prop_assert_eq!(all(table.logs().unwrap()), expected_logs);
        let names: BTreeSet<&Vec<u8>> = model.logs.keys().map(|(n, _)| n).chain(&probes).collect();
        for name in names {
            let want: Vec<LogRecord> = model.logs.values().filter(|r| &r.name == name).cloned().collect();
            prop_assert_eq!(all(table.logs_for(name).unwrap()), want);
        }

        let ids: BTreeSet<ObjectId> = model.refs.values().flat_map(|r| r.value.object_ids().copied().collect::<Vec<_>>()).collect();
        for wanted in ids.iter().chain([id(format, 9999), id(format, 7)].iter()) {
            let want: Vec<RefRecord> = model.refs.values().filter(|r| r.value.object_ids().any(|x| x == wanted)).cloned().collect();
            prop_assert_eq!(table.refs_for_object(wanted).unwrap(), want);
        }
    }

    #[test]
    fn a_stack_reads_as_its_newest_values(
        options in options_strategy(),
        transactions in proptest::collection::vec(
            (
                proptest::collection::vec((name_strategy(), value_strategy()), 0..40),
                proptest::collection::vec((log_strategy(), 0u64..3), 0..20),
            ),
            1..6,
        ),
        probes in proptest::collection::vec(name_strategy(), 0..6),
    ) {
        let format = options.version.object_format();
        let mut live: BTreeMap<Vec<u8>, RefRecord> = BTreeMap::new();
        let mut live_logs: BTreeMap<(Vec<u8>, u64), LogRecord> = BTreeMap::new();
        let mut tables = Vec::new();
        for (t, (refs, logs)) in transactions.iter().enumerate() {
            let index = t as u64 + 1;
            let refs: Vec<_> = refs.iter().map(|(n, v)| (n.clone(), v.clone(), 0)).collect();
            // Log entries may target this table's or an older update index,
            // so deletions can hide entries of older tables.
            let logs: Vec<_> = logs.iter().map(|(l, back)| (l.clone(), 0u64.wrapping_sub(*back.min(&(index - 1))))).collect();
            let mut table_content = content(format, index, index, &refs, &[]);
            for (spec, back) in &logs {
                let update_index = index.wrapping_add(*back);
                table_content.logs.insert(
                    (spec.name.clone(), u64::MAX - update_index),
                    LogRecord { name: spec.name.clone(), update_index, value: log_value(format, spec) },
                );
            }
            let min = table_content.logs.values().map(|r| r.update_index).min().unwrap_or(index).min(index);
            for record in table_content.refs.values() {
                match record.value {
                    RefValue::Deletion => { live.remove(&record.name); }
                    _ => { live.insert(record.name.clone(), record.clone()); }
                }
            }
            for (key, record) in &table_content.logs {
                match record.value {
                    LogValue::Deletion => { live_logs.remove(key); }
                    _ => { live_logs.insert(key.clone(), record.clone()); }
                }
            }
            tables.push(Table::new(write(options, min, index, &table_content)).unwrap());
        }
        let merged = Merged::new(&tables);
        let expected: Vec<RefRecord> = live.values().cloned().collect();
        prop_assert_eq!(all(merged.refs().unwrap()), expected);
        for probe in &probes {
            prop_assert_eq!(merged.ref_record(probe).unwrap(), live.get(probe).cloned());
            let from: Vec<RefRecord> = live.range(probe.clone()..).map(|(_, r)| r.clone()).collect();
            prop_assert_eq!(all(merged.seek_refs(probe).unwrap()), from);
        }
        // Lookups in ascending order (each a forward scan from the last)
        // and then in the probes' own order, on one kept lookup.
        let mut lookup = merged.lookup().unwrap();
        let mut ascending: Vec<&Vec<u8>> = live.keys().chain(&probes).collect();
        ascending.sort();
        for name in ascending.iter().chain(&probes.iter().collect::<Vec<_>>()) {
            prop_assert_eq!(lookup.get(name).unwrap(), live.get(*name).cloned());
        }
        // One merged iterator re-seeked to ascending names, reading one or
        // two records after each seek, as the availability check does.
        let mut iter = merged.refs_with_tombstones().unwrap();
        for (i, name) in ascending.iter().enumerate() {
            iter.seek(name).unwrap();
            let got: Vec<Vec<u8>> = iter.by_ref().take(1 + i % 2).map(|r| r.unwrap().name).collect();
            let mut fresh = merged.refs_with_tombstones().unwrap();
            fresh.seek(name).unwrap();
            let want: Vec<Vec<u8>> = fresh.take(1 + i % 2).map(|r| r.unwrap().name).collect();
            prop_assert_eq!(got, want);
        }
        let expected_logs: Vec<LogRecord> = live_logs.values().cloned().collect();
        prop_assert_eq!(all(merged.logs().unwrap()), expected_logs);
        for record in live.values() {
            for wanted in record.value.object_ids() {
                let want: Vec<RefRecord> = live.values().filter(|r| r.value.object_ids().any(|x| x == wanted)).cloned().collect();
                prop_assert_eq!(merged.refs_for_object(wanted).unwrap(), want);
            }
        }
    }
}

/// Reads the first index record of the index block at `position`:
/// (child position, type byte of the child block).
fn first_index_child(bytes: &[u8], position: usize) -> (usize, u8) {
    fn varint(bytes: &[u8], at: &mut usize) -> u64 {
        let mut value = u64::from(bytes[*at] & 0x7f);
        while bytes[*at] & 0x80 != 0 {
            *at += 1;
            value = ((value + 1) << 7) | u64::from(bytes[*at] & 0x7f);
        }
        *at += 1;
        value
    }
    assert_eq!(bytes[position], b'i', "an index block at {position}");
    let mut at = position + 4;
    assert_eq!(varint(bytes, &mut at), 0, "first record is a restart point");
    let suffix = varint(bytes, &mut at) >> 3;
    at += suffix as usize;
    let child = varint(bytes, &mut at) as usize;
    let child_type = if child == 0 { bytes[24] } else { bytes[child] };
    (child, child_type)
}

#[test]
fn small_blocks_give_multi_level_indexes_obj_blocks_and_a_log_index() {
    let format = ObjectFormat::Sha1;
    let refs: Vec<_> = (0..3000u16)
        .map(|i| {
            (
                format!("refs/heads/topic/{i:05}").into_bytes(),
                ValueSpec::Object(i),
                0,
            )
        })
        .collect();
    let logs: Vec<_> = (0..400u16)
        .map(|i| {
            (
                LogSpec {
                    name: format!("refs/heads/topic/{i:05}").into_bytes(),
                    deleted: false,
                    old: 0,
                    new: i,
                    who: "C O Mitter".into(),
                    time: 1_700_000_000 + u32::from(i),
                    tz: 90,
                    message: format!("update {i}"),
                },
                0,
            )
        })
        .collect();
    let model = content(format, 1, 1, &refs, &logs);
    let options = WriteOptions {
        block_size: 256,
        ..WriteOptions::default()
    };
    let bytes = write(options, 1, 1, &model);
    let table = Table::new(bytes.clone()).unwrap();
    let sections = *table.sections();
    assert_ne!(sections.ref_index_position, 0);
    assert_ne!(sections.obj_position, 0);
    assert_ne!(sections.obj_index_position, 0);
    assert_ne!(sections.log_index_position, 0);
    assert_eq!(sections.obj_id_len, 3, "ids share their first two bytes");
    // The root of the ref index points at another index block, which
    // points at ref blocks.
    let (level2, level2_type) = first_index_child(&bytes, sections.ref_index_position as usize);
    assert_eq!(level2_type, b'i');
    let (_, leaf_type) = first_index_child(&bytes, level2);
    assert_eq!(leaf_type, b'r');
    // Aligned: every ref block starts at a multiple of the block size.
    assert_eq!(level2 % 256, 0);

    let expected: Vec<RefRecord> = model.refs.values().cloned().collect();
    assert_eq!(all(table.refs().unwrap()), expected);
    let record = &expected[1234];
    assert_eq!(
        table.ref_record(&record.name).unwrap().as_ref(),
        Some(record)
    );
    assert_eq!(
        table.refs_for_object(&id(format, 1234)).unwrap(),
        vec![record.clone()]
    );
    let logs: Vec<LogRecord> = model.logs.values().cloned().collect();
    assert_eq!(all(table.logs().unwrap()), logs);
    assert_eq!(
        all(table.logs_for(b"refs/heads/topic/00399").unwrap()),
        vec![logs[399].clone()]
    );
}

#[test]
fn version_2_header_names_sha256() {
    let format = ObjectFormat::Sha256;
    let model = content(
        format,
        7,
        9,
        &[(b"refs/heads/main".to_vec(), ValueSpec::Object(1), 1)],
        &[],
    );
    let options = WriteOptions {
        version: Version::V2(format),
        ..WriteOptions::default()
    };
    let bytes = write(options, 7, 9, &model);
    assert_eq!(&bytes[..4], b"REFT");
    assert_eq!(bytes[4], 2, "version");
    assert_eq!(&bytes[5..8], &[0, 0x10, 0], "block size 4096");
    assert_eq!(&bytes[8..16], &7u64.to_be_bytes());
    assert_eq!(&bytes[16..24], &9u64.to_be_bytes());
    assert_eq!(&bytes[24..28], b"s256");
    assert_eq!(
        bytes[28], b'r',
        "the first block follows the 28-byte header"
    );
    let footer = &bytes[bytes.len() - 72..];
    assert_eq!(&footer[..28], &bytes[..28], "the footer repeats the header");
    let crc = crc32fast::hash(&footer[..68]);
    assert_eq!(&footer[68..], &crc.to_be_bytes());
    let table = Table::new(bytes).unwrap();
    assert_eq!(table.object_format(), ObjectFormat::Sha256);
    assert_eq!(
        all(table.refs().unwrap()),
        model.refs.values().cloned().collect::<Vec<_>>()
    );
}

#[test]
fn writer_rejects_what_the_format_cannot_hold() {
    let mut writer = Writer::new(WriteOptions::default(), 1, 1).unwrap();
    let record = |name: &[u8], update_index| RefRecord {
        name: name.to_vec(),
        update_index,
        value: RefValue::Deletion,
    };
    writer.add_ref(&record(b"refs/heads/b", 1)).unwrap();
    assert!(writer.add_ref(&record(b"refs/heads/a", 1)).is_err());
    assert!(writer.add_ref(&record(b"refs/heads/b", 1)).is_err());
    assert!(writer.add_ref(&record(b"refs/heads/c", 2)).is_err());
    let long = vec![b'x'; 5000];
    assert!(writer.add_ref(&record(&long, 1)).is_err());
    let sha256 = RefRecord {
        name: b"refs/heads/d".to_vec(),
        update_index: 1,
        value: RefValue::Object(id(ObjectFormat::Sha256, 1)),
    };
    assert!(writer.add_ref(&sha256).is_err());
    assert!(Writer::new(
        WriteOptions {
            block_size: 1 << 24,
            ..WriteOptions::default()
        },
        1,
        1
    )
    .is_err());
    assert!(Writer::new(WriteOptions::default(), 2, 1).is_err());
}

#[test]
fn empty_and_log_only_tables() {
    let empty = Writer::new(WriteOptions::default(), 1, 1)
        .unwrap()
        .finish()
        .unwrap();
    assert_eq!(empty.len(), 24 + 68);
    let table = Table::new(empty).unwrap();
    assert!(all(table.refs().unwrap()).is_empty());
    assert!(all(table.logs().unwrap()).is_empty());

    let format = ObjectFormat::Sha1;
    let logs: Vec<_> = (0..50u16)
        .map(|i| {
            (
                LogSpec {
                    name: b"refs/heads/main".to_vec(),
                    deleted: false,
                    old: i,
                    new: i + 1,
                    who: "x".into(),
                    time: 1,
                    tz: -480,
                    message: "m".repeat(usize::from(i) * 30),
                },
                u64::from(i),
            )
        })
        .collect();
    let model = content(format, 1, 50, &[], &logs);
    let bytes = write(
        WriteOptions {
            block_size: 512,
            ..WriteOptions::default()
        },
        1,
        50,
        &model,
    );
    assert_eq!(bytes[24], b'g', "the log block follows the header");
    let table = Table::new(bytes).unwrap();
    assert!(all(table.refs().unwrap()).is_empty());
    let newest_first: Vec<LogRecord> = model.logs.values().cloned().collect();
    assert_eq!(newest_first[0].update_index, 50);
    assert_eq!(
        all(table.logs_for(b"refs/heads/main").unwrap()),
        newest_first
    );
}

#[test]
fn sha256_ids_sharing_31_bytes_share_an_abbreviation() {
    let format = ObjectFormat::Sha256;
    let near = |last: u8| {
        let mut raw = [7u8; 32];
        raw[31] = last;
        ObjectId::from_raw(&raw).unwrap()
    };
    let mut writer = Writer::new(
        WriteOptions {
            block_size: 256,
            version: Version::V2(format),
            ..WriteOptions::default()
        },
        1,
        1,
    )
    .unwrap();
    let refs: Vec<RefRecord> = (0..40u8)
        .map(|i| RefRecord {
            name: format!("refs/heads/n{i:02}").into_bytes(),
            update_index: 1,
            value: RefValue::Object(near(i % 4)),
        })
        .collect();
    for record in &refs {
        writer.add_ref(record).unwrap();
    }
    let table = Table::new(writer.finish().unwrap()).unwrap();
    assert_eq!(table.sections().obj_id_len, 31);
    assert_ne!(table.sections().obj_position, 0);
    for last in 0..5u8 {
        let want: Vec<RefRecord> = refs
            .iter()
            .filter(|r| r.value == RefValue::Object(near(last)))
            .cloned()
            .collect();
        assert_eq!(table.refs_for_object(&near(last)).unwrap(), want);
    }
}
