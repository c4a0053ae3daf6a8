//! `FilesBackend::visit` shows exactly what `list` returns, in the same
//! order, on random stores: loose refs shadowing packed ones, broken loose
//! refs, symbolic refs, peeled tags, sorted and unsorted `packed-refs`,
//! prefixes that seek into the middle of the file. It also says when the
//! file knows that a ref is not an annotated tag. `visit_each` is each
//! prefix's visit in turn.

use proptest::prelude::*;
use refstore_fs::real::RealFs;
use refstore_refs::files::FilesBackend;
use refstore_refs::value::{Peeled, Ref, RefView};
use refstore_refs::{Backend, ObjectFormat, ObjectId, ReadError};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

/// Leaf names, sorted, with no name a directory of another, so each can
/// be loose.
const NAMES: &[&str] = &[
    "refs/heads/a",
    "refs/heads/b",
    "refs/heads/c/d",
    "refs/heads/c/e",
    "refs/heads/f-h",
    "refs/heads/f.g",
    "refs/tags/v1",
    "refs/tags/v2",
    "refs/tags/w",
    "refs/x/y",
];

const PREFIXES: &[&str] = &[
    "",
    "refs/",
    "refs/heads/",
    "refs/heads/c",
    "refs/heads/c/",
    "refs/heads/f",
    "refs/tags/",
    "refs/tags/v",
    "refs/x/y",
    "refs/z",
];

const HEADERS: &[&str] = &[
    "# pack-refs with: peeled fully-peeled sorted \n",
    "# pack-refs with: peeled sorted \n",
    "# pack-refs with: peeled \n",
    "",
];

fn id(n: u8) -> ObjectId {
    ObjectId::from_raw(&[n; 20]).unwrap()
}

/// Where a ref of the random store lives.
#[derive(Debug, Clone, Copy)]
enum Place {
    Packed { peeled: bool },
    Loose,
    Both,
    BrokenLoose,
    BrokenLooseOverPacked,
    SymbolicLoose,
}

fn place() -> impl Strategy<Value = Option<Place>> {
    prop_oneof![
        Just(None),
        any::<bool>().prop_map(|peeled| Some(Place::Packed { peeled })),
        Just(Some(Place::Loose)),
        Just(Some(Place::Both)),
        Just(Some(Place::BrokenLoose)),
        Just(Some(Place::BrokenLooseOverPacked)),
        Just(Some(Place::SymbolicLoose)),
    ]
}

fn backend(dir: &Path) -> FilesBackend {
    FilesBackend::new(
        Arc::new(RealFs::new()),
        dir.to_owned(),
        dir.to_owned(),
        ObjectFormat::Sha1,
    )
}

fn write_loose(dir: &Path, name: &str, content: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// Builds the store; packed lines are written in name order (reversed when
/// the header does not promise sorting, to exercise the sorting path).
fn build(dir: &Path, places: &[Option<Place>], header: &str) {
    let mut packed = Vec::new();
    for (i, (name, place)) in NAMES.iter().zip(places).enumerate() {
        let n = i as u8 + 1;
        let hex = id(n).to_hex();
        match place {
            None => {}
            Some(Place::Packed { peeled }) => {
                let mut lines = format!("{hex} {name}\n");
                if *peeled {
                    lines.push_str(&format!("^{}\n", id(n + 100).to_hex()));
                }
                packed.push(lines);
            }
            Some(Place::Loose) => write_loose(dir, name, &format!("{hex}\n")),
            Some(Place::Both) => {
                packed.push(format!("{hex} {name}\n"));
                write_loose(dir, name, &format!("{}\n", id(n + 50).to_hex()));
            }
            Some(Place::BrokenLoose) => write_loose(dir, name, "garbage\n"),
            Some(Place::BrokenLooseOverPacked) => {
                packed.push(format!("{hex} {name}\n"));
                write_loose(dir, name, "garbage\n");
            }
            Some(Place::SymbolicLoose) => write_loose(dir, name, "ref: refs/heads/a\n"),
        }
    }
    if !header.contains("sorted") {
        packed.reverse();
    }
    std::fs::write(
        dir.join("packed-refs"),
        format!("{header}{}", packed.concat()),
    )
    .unwrap();
}

fn visited(backend: &dyn Backend, prefix: &[u8]) -> Result<Vec<(Ref, Peeled)>, ReadError> {
    let mut seen = Vec::new();
    backend.visit(prefix, &mut |view: RefView<'_>| {
        seen.push((view.to_ref(), view.peeled));
        ControlFlow::Continue(())
    })?;
    Ok(seen)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn visit_agrees_with_list(
        places in proptest::collection::vec(place(), NAMES.len()),
        header in proptest::sample::select(HEADERS),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        build(tmp.path(), &places, header);
        let backend = backend(tmp.path());
        for prefix in PREFIXES {
            let listed = backend.list(prefix.as_bytes()).unwrap().refs;
            let seen = visited(&backend, prefix.as_bytes()).unwrap();
            let refs: Vec<Ref> = seen.iter().map(|(r, _)| r.clone()).collect();
            prop_assert_eq!(&refs, &listed, "prefix {:?}", prefix);
            for (r, peeled) in &seen {
                let i = NAMES.iter().position(|n| n.as_bytes() == r.name.as_bytes()).unwrap();
                let expected = match places[i].unwrap() {
                    Place::Packed { peeled: true } => Peeled::Tag(id(i as u8 + 101)),
                    Place::Packed { peeled: false } if header.contains("fully-peeled") => {
                        Peeled::NotATag
                    }
                    Place::Packed { peeled: false }
                        if header.contains("peeled") && r.name.as_bytes().starts_with(b"refs/tags/") =>
                    {
                        Peeled::NotATag
                    }
                    Place::Packed { .. } => Peeled::Unknown,
                    _ => Peeled::Unknown,
                };
                prop_assert_eq!(*peeled, expected, "{}", r.name);
            }
        }
    }
}

/// The prefixes of `chosen` (indexes into [`PREFIXES`]) sorted, those
/// another one covers left out, as [`Backend::visit_each`] takes them.
fn disjoint_prefixes(chosen: &[usize]) -> Vec<&'static [u8]> {
    let mut prefixes: Vec<&[u8]> = chosen.iter().map(|&i| PREFIXES[i].as_bytes()).collect();
    prefixes.sort();
    prefixes.dedup_by(|later, earlier| later.starts_with(earlier));
    prefixes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Visiting several prefixes at once shows each prefix's refs in
    /// turn, and a visitor that breaks stops the whole visit.
    #[test]
    fn visit_each_is_each_visit_in_turn(
        places in proptest::collection::vec(place(), NAMES.len()),
        chosen in proptest::collection::vec(0..PREFIXES.len(), 0..4),
        stop_after in 1usize..8,
    ) {
        let tmp = tempfile::tempdir().unwrap();
        build(tmp.path(), &places, HEADERS[0]);
        let backend = backend(tmp.path());
        let prefixes = disjoint_prefixes(&chosen);
        let mut expected = Vec::new();
        for prefix in &prefixes {
            expected.extend(visited(&backend, prefix).unwrap().into_iter().map(|(r, _)| r));
        }
        let mut seen = Vec::new();
        backend
            .visit_each(&prefixes, &mut |view: RefView<'_>| {
                seen.push(view.to_ref());
                ControlFlow::Continue(())
            })
            .unwrap();
        prop_assert_eq!(&seen, &expected);

        let mut stopped = Vec::new();
        backend
            .visit_each(&prefixes, &mut |view: RefView<'_>| {
                stopped.push(view.to_ref());
                if stopped.len() == stop_after {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .unwrap();
        prop_assert_eq!(&stopped[..], &expected[..expected.len().min(stop_after)]);
    }
}

/// A big sorted file: every prefix seeks to the right line, peeled lines
/// included, and the visitor can stop early.
#[test]
fn seeking_a_large_file_finds_every_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let mut text = String::from(HEADERS[0]);
    for i in 0..2000u32 {
        text.push_str(&format!(
            "{} refs/heads/b{i:05}\n",
            id((i % 200) as u8).to_hex()
        ));
        if i % 3 == 0 {
            text.push_str(&format!("^{}\n", id(7).to_hex()));
        }
    }
    std::fs::write(tmp.path().join("packed-refs"), text).unwrap();
    let backend = backend(tmp.path());
    for prefix in [
        "refs/heads/b0",
        "refs/heads/b00000",
        "refs/heads/b01999",
        "refs/heads/b017",
        "refs/heads/b1",
        "refs/heads/c",
        "refs/a",
        "",
    ] {
        let listed = backend.list(prefix.as_bytes()).unwrap().refs;
        let seen: Vec<Ref> = visited(&backend, prefix.as_bytes())
            .unwrap()
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        assert_eq!(seen, listed, "prefix {prefix:?}");
    }
    let mut count = 0;
    backend
        .visit(b"refs/heads/b01", &mut |view: RefView<'_>| {
            count += 1;
            assert!(view.name.starts_with(b"refs/heads/b01"));
            if count == 5 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!(count, 5);
}

/// Damage in the part of the file being read is reported, with its line.
#[test]
fn damaged_lines_in_range_are_errors() {
    let a = id(1).to_hex();
    let cases = [
        (
            format!("{}{a} refs/heads/a\n{a} refs/heads/b c\n", HEADERS[0]),
            Some(3),
        ),
        (format!("{}{a} refs/heads/a\n^zz\n", HEADERS[0]), Some(3)),
        (format!("{}^{a}\n{a} refs/heads/a\n", HEADERS[0]), Some(2)),
        (
            format!("{}{a} refs/heads/a\n^{a}\n^{a}\n", HEADERS[0]),
            Some(4),
        ),
        (
            format!("{}{a} refs/heads/b\n{a} refs/heads/a\n", HEADERS[0]),
            Some(0),
        ),
        (format!("{}{a}refs/heads/a\n", HEADERS[0]), Some(2)),
    ];
    for (text, line) in cases {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("packed-refs"), &text).unwrap();
        let backend = backend(tmp.path());
        let err = visited(&backend, b"").unwrap_err();
        match (err, line) {
            (ReadError::Packed { error, .. }, Some(line)) => assert_eq!(error.line, line, "{text}"),
            (other, _) => panic!("{text}: {other:?}"),
        }
        // `list` refuses the same files.
        assert!(backend.list(b"").is_err(), "{text}");
    }
}
