//! The header of a loose object (`<type> <size>\0` at the start of its
//! inflated content), parsed as git does, and an object's kind read from
//! its loose file alone.
//!
//! A one-ref `update-ref` asks one question of the object database: what
//! kind of object is the new value (it must exist, and a branch must name a
//! commit). The value is usually a loose object just written, and opening
//! the whole database for it (resolving the objects directory, reading
//! alternates, listing the packs twice) costs more than the answer. So the
//! loose file is asked first; only an object that is not loose needs
//! [`crate::Odb`].

use crate::loose::loose_object_path;
use crate::ObjectKind;
use flate2::{Decompress, FlushDecompress};
use refstore_hash::ObjectId;
use std::io::Read;
use std::path::Path;

/// The longest header a loose object can have: `<type> <size>\0`, with the
/// longest type name and a 64-bit size in decimal.
const MAX_HEADER: usize = "commit ".len() + 20 + 1;

/// How much of the deflated file is read: a header deflates to fewer bytes
/// than it has, plus zlib's two-byte preamble, in any but a pathological
/// stream; a stream that needs more is answered by [`crate::Odb`].
const READ: usize = 64;

/// The kind of the loose object `id` under `objects_dir`, from the header
/// at the start of its file. `None` when there is no loose file or its
/// start cannot be read as a loose object's header: the caller then asks
/// [`crate::Odb`], which also finds packed objects and reports corruption.
pub fn loose_kind(objects_dir: &Path, id: &ObjectId) -> Option<ObjectKind> {
    let mut file = std::fs::File::open(loose_object_path(objects_dir, id)).ok()?;
    let mut deflated = [0u8; READ];
    let mut filled = 0;
    while filled < READ {
        match file.read(&mut deflated[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    header_kind(&deflated[..filled])
}

/// The kind named by the header at the start of a deflated loose object.
fn header_kind(deflated: &[u8]) -> Option<ObjectKind> {
    let mut header = [0u8; MAX_HEADER];
    let mut inflate = Decompress::new(true);
    inflate
        .decompress(deflated, &mut header, FlushDecompress::None)
        .ok()?;
    let produced = inflate.total_out() as usize;
    let header = &header[..produced];
    let end = header.iter().position(|&b| b == 0)?;
    parse_loose_header(&header[..end]).map(|(kind, _)| kind)
}

/// Parses a loose object's header, without its terminating NUL: a type
/// name, one space, and the size in canonical decimal (no sign, no leading
/// zero), as git requires. `None` for anything else.
pub fn parse_loose_header(header: &[u8]) -> Option<(ObjectKind, u64)> {
    let space = header.iter().position(|&b| b == b' ')?;
    let (name, size) = (&header[..space], &header[space + 1..]);
    let canonical = !size.is_empty()
        && size.iter().all(u8::is_ascii_digit)
        && (size.len() == 1 || size[0] != b'0');
    if !canonical {
        return None;
    }
    let size = std::str::from_utf8(size).ok()?.parse().ok()?;
    Some((ObjectKind::from_name(name)?, size))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{write::ZlibEncoder, Compression};
    use std::io::Write;

    fn deflated(data: &[u8]) -> Vec<u8> {
        let mut encoder = ZlibEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn every_kind_is_read_from_the_header() {
        for kind in [
            ObjectKind::Commit,
            ObjectKind::Tree,
            ObjectKind::Blob,
            ObjectKind::Tag,
        ] {
            let mut object = format!("{} 5\0", kind.as_str()).into_bytes();
            object.extend_from_slice(b"hello");
            assert_eq!(header_kind(&deflated(&object)), Some(kind));
        }
        // A large object: only the start of its stream is given.
        let mut big = b"blob 1000000\0".to_vec();
        big.extend((0..1_000_000u64).map(|i| (i * 7919 % 251) as u8));
        assert_eq!(header_kind(&deflated(&big)[..READ]), Some(ObjectKind::Blob));
    }

    #[test]
    fn anything_but_a_header_is_no_answer() {
        for bad in [
            &b"blob5\0hello"[..],
            b"blob 05\0hello",
            b"blob \0",
            b"blob 5x\0hello",
            b"bolb 5\0hello",
            b"commit 5",
            b"tree\0 5 ",
        ] {
            assert_eq!(header_kind(&deflated(bad)), None, "{bad:?}");
        }
        assert_eq!(header_kind(b"not zlib at all"), None);
        assert_eq!(header_kind(b""), None);
    }

    #[test]
    fn headers_are_parsed_as_git_does() {
        assert_eq!(
            parse_loose_header(b"commit 0"),
            Some((ObjectKind::Commit, 0))
        );
        assert_eq!(
            parse_loose_header(b"blob 18446744073709551615"),
            Some((ObjectKind::Blob, u64::MAX))
        );
        for bad in [
            &b"blob 18446744073709551616"[..],
            b"blob +5",
            b"blob 5 ",
            b"blob  5",
            b"Blob 5",
            b"blob",
        ] {
            assert_eq!(parse_loose_header(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_missing_file_is_no_answer_and_a_written_one_is_read() {
        let tmp = tempfile::tempdir().unwrap();
        let id = ObjectId::from_hex(b"ce013625030ba8dba906f756967f9e9ca394464a").unwrap();
        assert_eq!(loose_kind(tmp.path(), &id), None);
        let path = loose_object_path(tmp.path(), &id);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, deflated(b"blob 6\0hello\n")).unwrap();
        assert_eq!(loose_kind(tmp.path(), &id), Some(ObjectKind::Blob));
    }
}
