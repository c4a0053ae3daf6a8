//! Damaged tables are errors, never panics and never tables with fewer
//! records: truncation at every length, every flipped footer bit, bad block
//! types, and every flipped block byte.

use std::panic::{catch_unwind, AssertUnwindSafe};

use refstore_refs::reftable::{
    LogEntry, LogRecord, LogValue, RefRecord, RefValue, Table, WriteOptions, Writer,
};
use refstore_refs::{ObjectFormat, ObjectId};

fn oid(n: u32) -> ObjectId {
    let mut raw = [0u8; 20];
    raw[..4].copy_from_slice(&n.to_be_bytes());
    ObjectId::from_raw(&raw).unwrap()
}

struct Sample {
    bytes: Vec<u8>,
    refs: Vec<RefRecord>,
    logs: Vec<LogRecord>,
}

/// A table with several ref blocks, a ref index, obj blocks and several
/// log blocks.
fn sample(options: WriteOptions) -> Sample {
    let mut refs = vec![RefRecord {
        name: b"HEAD".to_vec(),
        update_index: 1,
        value: RefValue::Symbolic(b"refs/heads/main".to_vec()),
    }];
    for i in 0..40u32 {
        refs.push(RefRecord {
            name: format!("refs/heads/b{i:03}").into_bytes(),
            update_index: 1 + u64::from(i % 3),
            value: match i % 4 {
                0 => RefValue::Deletion,
                1 => RefValue::Peeled {
                    target: oid(i),
                    peeled: oid(i + 1000),
                },
                _ => RefValue::Object(oid(i)),
            },
        });
    }
    let mut logs = Vec::new();
    for i in 0..16u32 {
        for update_index in [3, 1] {
            logs.push(LogRecord {
                name: format!("refs/heads/b{i:03}").into_bytes(),
                update_index,
                value: LogValue::Update(LogEntry {
                    old_id: ObjectFormat::Sha1.null_id(),
                    new_id: oid(i),
                    committer_name: b"C O Mitter".to_vec(),
                    email: b"c@example.com".to_vec(),
                    time: 1_700_000_000 + u64::from(i),
                    tz_offset: 90,
                    message: format!("entry {i} at {update_index}").into_bytes(),
                }),
            });
        }
    }
    let mut writer = Writer::new(options, 1, 3).unwrap();
    for record in &refs {
        writer.add_ref(record).unwrap();
    }
    for record in &logs {
        writer.add_log(record).unwrap();
    }
    Sample {
        bytes: writer.finish().unwrap(),
        refs,
        logs,
    }
}

fn options() -> WriteOptions {
    WriteOptions {
        block_size: 256,
        restart_interval: 4,
        ..WriteOptions::default()
    }
}

type Everything = (Vec<RefRecord>, Vec<LogRecord>);

/// Reads every record through each access path (lookups of a sample of
/// them when `every` is more than 1); any error is returned.
fn read_everything(
    bytes: &[u8],
    sample: &Sample,
    every: usize,
) -> refstore_refs::reftable::Result<Everything> {
    let table = Table::new(bytes.to_vec())?;
    let refs: Vec<RefRecord> = table.refs()?.collect::<Result<_, _>>()?;
    let logs: Vec<LogRecord> = table.logs()?.collect::<Result<_, _>>()?;
    for record in sample.refs.iter().step_by(every) {
        table.ref_record(&record.name)?;
        for id in record.value.object_ids() {
            table.refs_for_object(id)?;
        }
    }
    for record in sample.logs.iter().step_by(7 * every) {
        table
            .logs_for(&record.name)?
            .collect::<Result<Vec<_>, _>>()?;
    }
    Ok((refs, logs))
}

/// Reads `bytes`, failing the test on a panic; returns the result.
fn read_without_panic(
    bytes: &[u8],
    sample: &Sample,
    what: &str,
    every: usize,
) -> refstore_refs::reftable::Result<Everything> {
    catch_unwind(AssertUnwindSafe(|| read_everything(bytes, sample, every)))
        .unwrap_or_else(|_| panic!("reading panicked: {what}"))
}

#[test]
fn the_sample_reads_whole() {
    for options in [
        options(),
        WriteOptions {
            align_blocks: false,
            ..options()
        },
    ] {
        let sample = sample(options);
        let table = Table::new(sample.bytes.clone()).unwrap();
        assert_ne!(table.sections().ref_index_position, 0);
        assert_ne!(table.sections().obj_position, 0);
        assert_ne!(table.sections().log_index_position, 0);
        let (refs, logs) = read_everything(&sample.bytes, &sample, 1).unwrap();
        assert_eq!(refs, sample.refs);
        assert_eq!(logs, sample.logs);
    }
}

#[test]
fn every_truncation_is_an_error() {
    let sample = sample(options());
    for len in 0..sample.bytes.len() {
        let result = read_without_panic(
            &sample.bytes[..len],
            &sample,
            &format!("truncated to {len}"),
            1,
        );
        assert!(
            result.is_err(),
            "a table truncated to {len} bytes read as valid"
        );
    }
}

#[test]
fn every_flipped_footer_bit_is_an_error() {
    let sample = sample(options());
    let footer = sample.bytes.len() - 68;
    for at in footer..sample.bytes.len() {
        for bit in 0..8 {
            let mut bad = sample.bytes.clone();
            bad[at] ^= 1 << bit;
            let result = read_without_panic(&bad, &sample, &format!("bit {bit} of byte {at}"), 1);
            let error = result
                .expect_err("a damaged footer read as valid")
                .to_string();
            assert!(error.contains("corrupt reftable"), "{error}");
        }
    }
    let mut header = sample.bytes.clone();
    header[4] = 3;
    let error = Table::new(header).unwrap_err().to_string();
    assert!(error.contains("version"), "{error}");
}

#[test]
fn bad_block_types_are_errors() {
    let sample = sample(options());
    let table = Table::new(sample.bytes.clone()).unwrap();
    let sections = *table.sections();
    // The first ref block, a later ref block, the ref index, an obj block
    // and the first log block, each given an unknown or a wrong type.
    let positions = [
        24usize,
        256,
        sections.ref_index_position as usize,
        sections.obj_position as usize,
        sections.log_position as usize,
    ];
    for at in positions {
        for wrong in [b'x', 0, b'r', b'g', b'o', b'i'] {
            if sample.bytes[at] == wrong {
                continue;
            }
            let mut bad = sample.bytes.clone();
            bad[at] = wrong;
            let what = format!("type {wrong:#x} at {at}");
            let result = read_without_panic(&bad, &sample, &what, 1);
            assert!(result.is_err(), "{what} read as valid");
        }
    }
    // A scan alone (no index involved) notices a ref or log block whose
    // type was changed to that of another section.
    for at in [24usize, 256, 512, sections.log_position as usize] {
        for wrong in [b'i', b'o', b'g', b'r'] {
            if sample.bytes[at] == wrong {
                continue;
            }
            let mut bad = sample.bytes.clone();
            bad[at] = wrong;
            let Ok(table) = Table::new(bad) else {
                continue;
            };
            let refs = table.refs().and_then(|i| i.collect::<Result<Vec<_>, _>>());
            let logs = table.logs().and_then(|i| i.collect::<Result<Vec<_>, _>>());
            assert!(
                refs.is_err() || logs.is_err(),
                "type {wrong:#x} at {at}: a scan read {:?} refs and {:?} logs",
                refs.map(|r| r.len()),
                logs.map(|l| l.len())
            );
        }
    }
    let mut bad = sample.bytes.clone();
    bad[256] = b'x';
    let error = read_everything(&bad, &sample, 1).unwrap_err().to_string();
    assert!(
        error.contains("unknown block type 0x78") && error.contains("byte 256"),
        "{error}"
    );
}

/// Flipping any byte of any block may change a value (the format has no
/// block checksums) but must never panic, and must never lose or invent
/// records without an error.
#[test]
fn flipped_block_bytes_never_lose_records_silently() {
    let layouts = [
        (options(), 0xff),
        (
            WriteOptions {
                align_blocks: false,
                ..options()
            },
            0x01,
        ),
    ];
    for (options, pattern) in layouts {
        let sample = sample(options);
        let blocks_end = sample.bytes.len() - 68;
        for at in 24..blocks_end {
            {
                let mut bad = sample.bytes.clone();
                bad[at] ^= pattern;
                let what = format!("byte {at} ^ {pattern:#x}");
                read_without_panic(&bad, &sample, &what, 40).ok();
                // A plain scan, which no index double-checks, must not
                // lose or invent records either.
                let scan = catch_unwind(|| {
                    let table = Table::new(bad.clone())?;
                    let refs = table.refs()?.collect::<Result<Vec<_>, _>>()?;
                    let logs = table.logs()?.collect::<Result<Vec<_>, _>>()?;
                    Ok::<_, refstore_refs::reftable::Error>((refs.len(), logs.len()))
                })
                .unwrap_or_else(|_| panic!("scanning panicked: {what}"));
                if let Ok(counts) = scan {
                    assert_eq!(
                        counts,
                        (sample.refs.len(), sample.logs.len()),
                        "{what}: records lost or invented"
                    );
                }
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 200, ..Default::default() })]

    /// Several bytes of the blocks overwritten at once: any outcome but a
    /// panic is acceptable here (single flips above check the counts).
    #[test]
    fn random_damage_never_panics(
        damage in proptest::collection::vec((proptest::prelude::any::<proptest::sample::Index>(), proptest::prelude::any::<u8>()), 1..8),
        aligned in proptest::prelude::any::<bool>(),
    ) {
        let sample = sample(WriteOptions { align_blocks: aligned, ..options() });
        let blocks = 24..sample.bytes.len() - 68;
        let mut bad = sample.bytes.clone();
        for (at, byte) in &damage {
            bad[blocks.start + at.index(blocks.len())] = *byte;
        }
        read_without_panic(&bad, &sample, &format!("{damage:?}"), 1).ok();
    }
}
