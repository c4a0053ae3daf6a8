//! Targets for the files format: `packed-refs`, loose ref files and
//! reflog lines.

use crate::checks::{check_message, FORMATS};
use refstore_refs::files::loose;
use refstore_refs::files::packed::{self, PackedRefs, Scan};
use refstore_refs::reftable::migrate::parse_line;
use refstore_refs::reftable::LogEntry;
use refstore_refs::RefName;

/// `packed-refs`, read both ways the files backend reads it: parsed whole,
/// and scanned in place by prefix. A sorted file that parses scans to the
/// same refs for every prefix; and what parses, written again, parses to
/// the same refs.
pub fn packed_refs(data: &[u8]) {
    for format in FORMATS {
        let packed = match PackedRefs::parse(data.to_vec(), format) {
            Ok(packed) => packed,
            Err(e) => {
                check_message(&e.to_string());
                // The scan meets the same damage or none, but must not panic.
                if let Some(scan) = Scan::new(data, format, b"") {
                    for view in scan {
                        if let Err(e) = view {
                            check_message(&e.to_string());
                        }
                    }
                }
                continue;
            }
        };
        let views: Vec<_> = (0..packed.len()).map(|i| packed.view(i).unwrap()).collect();
        let mut prefixes: Vec<&[u8]> = vec![b"", b"refs/", b"refs/tags/"];
        prefixes.extend(views.iter().step_by(5).take(8).map(|v| v.name));
        prefixes.extend(views.iter().take(4).map(|v| &v.name[..v.name.len() / 2]));
        for prefix in prefixes {
            let Some(scan) = Scan::new(data, format, prefix) else {
                continue;
            };
            let scanned: Vec<_> = scan
                .collect::<Result<_, _>>()
                .expect("a sorted file that parses whole scans without error");
            let expected: Vec<_> = views
                .iter()
                .filter(|v| v.name.starts_with(prefix))
                .copied()
                .collect();
            assert_eq!(
                scanned, expected,
                "scan by {prefix:?} differs from the parse"
            );
        }
        for view in &views {
            assert_eq!(packed.find(view.name).unwrap().name.as_bytes(), view.name);
        }
        let refs: Vec<_> = packed.iter().collect();
        let strictly_sorted = refs.windows(2).all(|w| w[0].name < w[1].name);
        if strictly_sorted {
            let text = packed::write(refs.iter().map(|r| {
                let id = *r.target.object_id().expect("packed refs name objects");
                (r.name.clone(), id, r.peeled)
            }));
            let again = PackedRefs::parse(text, format).expect("a written packed-refs parses");
            assert_eq!(again.iter().collect::<Vec<_>>(), refs);
        }
    }
}

/// A loose ref file. Round trip: what parses, written as git writes it,
/// parses to the same target.
pub fn loose_ref(data: &[u8]) {
    for format in FORMATS {
        match loose::parse(data, format) {
            Ok(target) => {
                let written = loose::format(&target);
                assert_eq!(loose::parse(&written, format).unwrap(), target);
            }
            Err(e) => check_message(&e.to_string()),
        }
    }
    // Symbolic targets and pushed names go through the ref name rules.
    let _ = RefName::new(data);
}

/// Reflog lines (one per input line), as `refs migrate` reads them. Round
/// trip: an entry that parses, written as a line again, parses to the same
/// entry.
pub fn reflog_line(data: &[u8]) {
    for format in FORMATS {
        for line in data.split(|&b| b == b'\n') {
            let Some(entry) = parse_line(line, format) else {
                continue;
            };
            // Offsets beyond four digits of hours and minutes have no
            // canonical text to compare with.
            if entry.tz_offset.unsigned_abs() <= 99 * 60 + 59 {
                let again = parse_line(&write_line(&entry), format)
                    .expect("a reflog line written from an entry parses");
                assert_eq!(again, entry);
            }
        }
    }
}

/// `<old> <new> <name> <<email>> <time> <tz>\t<message>`, as git writes it.
fn write_line(entry: &LogEntry) -> Vec<u8> {
    let tz = i32::from(entry.tz_offset);
    let sign = if tz < 0 { '-' } else { '+' };
    let when = format!(
        "> {} {sign}{:02}{:02}",
        entry.time,
        tz.abs() / 60,
        tz.abs() % 60
    );
    let mut line = Vec::new();
    line.extend_from_slice(entry.old_id.to_hex().as_bytes());
    line.push(b' ');
    line.extend_from_slice(entry.new_id.to_hex().as_bytes());
    line.push(b' ');
    line.extend_from_slice(&entry.committer_name);
    line.extend_from_slice(b" <");
    line.extend_from_slice(&entry.email);
    line.extend_from_slice(when.as_bytes());
    let message = entry.message.strip_suffix(b"\n").unwrap_or(&entry.message);
    if !message.is_empty() {
        line.push(b'\t');
        line.extend_from_slice(message);
    }
    line
}
