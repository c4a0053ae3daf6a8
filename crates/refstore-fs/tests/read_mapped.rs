//! `Vfs::read_mapped` on the real filesystem: large files are mapped and
//! small ones read, and either way the bytes are the file's; a mapping
//! keeps showing the file it was made from after a rename replaces it, as
//! readers of `packed-refs` rely on.

use refstore_fs::real::RealFs;
use refstore_fs::Vfs;

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn mapped_bytes_are_the_file_at_every_size() {
    let dir = tempfile::tempdir().unwrap();
    let fs = RealFs::new();
    for len in [
        0,
        1,
        4095,
        4096,
        256 * 1024 - 1,
        256 * 1024,
        3 * 1024 * 1024 + 17,
    ] {
        let path = dir.path().join(format!("f{len}"));
        let bytes = pattern(len, len as u8);
        std::fs::write(&path, &bytes).unwrap();
        let mapped = fs.read_mapped(&path).unwrap();
        assert_eq!(&mapped[..], &bytes[..], "{len} bytes");
    }
}

#[test]
fn a_missing_file_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let error = RealFs::new()
        .read_mapped(&dir.path().join("packed-refs"))
        .unwrap_err();
    assert!(error.is_not_found(), "{error}");
}

#[test]
fn a_mapping_outlives_the_rename_that_replaces_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let fs = RealFs::new();
    let path = dir.path().join("packed-refs");
    let old = pattern(1024 * 1024, 1);
    std::fs::write(&path, &old).unwrap();
    let mapped = fs.read_mapped(&path).unwrap();

    let new = pattern(512 * 1024, 2);
    let lock = dir.path().join("packed-refs.lock");
    std::fs::write(&lock, &new).unwrap();
    std::fs::rename(&lock, &path).unwrap();

    assert_eq!(&mapped[..], &old[..]);
    assert_eq!(&fs.read_mapped(&path).unwrap()[..], &new[..]);
}
