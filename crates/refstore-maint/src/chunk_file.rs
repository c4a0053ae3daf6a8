//! git's chunk-file layout, shared by the multi-pack-index and the
//! commit-graph: after the file's own header, a table of contents of
//! (4-byte chunk id, 8-byte offset) rows, ended by a row of id 0 whose
//! offset is where the last chunk ends, then the chunks one after another.

/// Appends the table of contents of `chunks` and the chunks themselves to
/// `out`, which holds the file's header.
pub(crate) fn append_chunks(out: &mut Vec<u8>, chunks: &[([u8; 4], &[u8])]) {
    let mut offset = (out.len() + 12 * (chunks.len() + 1)) as u64;
    for (id, chunk) in chunks {
        out.extend_from_slice(id);
        out.extend_from_slice(&offset.to_be_bytes());
        offset += chunk.len() as u64;
    }
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&offset.to_be_bytes());
    for (_, chunk) in chunks {
        out.extend_from_slice(chunk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_count_from_the_start_of_the_file() {
        let mut out = b"HEAD".to_vec();
        append_chunks(&mut out, &[(*b"ONE_", b"ab"), (*b"TWO_", b"cde")]);
        // 4 header bytes, 3 rows of 12: the first chunk starts at 40.
        let mut expected = b"HEAD".to_vec();
        expected.extend_from_slice(b"ONE_");
        expected.extend_from_slice(&40u64.to_be_bytes());
        expected.extend_from_slice(b"TWO_");
        expected.extend_from_slice(&42u64.to_be_bytes());
        expected.extend_from_slice(&[0; 4]);
        expected.extend_from_slice(&45u64.to_be_bytes());
        expected.extend_from_slice(b"abcde");
        assert_eq!(out, expected);
    }
}
