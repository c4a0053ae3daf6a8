//! The stack's table of contents, `reftable/tables.list`, and the names git
//! gives tables.
//!
//! `tables.list` names the live tables, one per line, oldest first. Table
//! names are `0x<min>-0x<max>-<random>.ref`: the update index range in 12
//! hex digits each and 8 random hex digits, so that every file name is new.

use super::error::{Error, Result};

/// Parses `tables.list`: one table name per line, oldest first.
pub fn parse(content: &[u8]) -> Result<Vec<String>> {
    if content.is_empty() {
        return Ok(Vec::new());
    }
    let Some(body) = content.strip_suffix(b"\n") else {
        return Err(Error::corrupt(
            content.len(),
            "tables.list does not end with a newline; it was cut short",
        ));
    };
    let mut names = Vec::new();
    let mut offset = 0;
    for line in body.split(|&b| b == b'\n') {
        let name = std::str::from_utf8(line)
            .ok()
            .filter(|name| is_valid_table_name(name))
            .ok_or_else(|| {
                Error::corrupt(
                    offset,
                    format!(
                        "tables.list names '{}', which is not a table file name",
                        String::from_utf8_lossy(line)
                    ),
                )
            })?;
        names.push(name.to_owned());
        offset += line.len() + 1;
    }
    Ok(names)
}

/// Formats `tables.list` for `names`, oldest first.
pub fn format(names: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for name in names {
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
    }
    out
}

/// A plain file name in the reftable directory: no path separators, not a
/// dot file, no control characters.
fn is_valid_table_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.contains(['/', '\\'])
        && !name.bytes().any(|b| b.is_ascii_control())
}

/// The name git gives a table of `min..=max` update indexes:
/// `0x{min:012x}-0x{max:012x}-{random:08x}.ref`.
pub fn table_name(min_update_index: u64, max_update_index: u64, random: u32) -> String {
    format!("0x{min_update_index:012x}-0x{max_update_index:012x}-{random:08x}.ref")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_git() {
        assert_eq!(
            table_name(1, 0x2a, 0xdeadbeef),
            "0x000000000001-0x00000000002a-deadbeef.ref"
        );
    }

    #[test]
    fn round_trips_and_rejects_damage() {
        let names = vec![table_name(1, 1, 7), table_name(2, 5, 9)];
        let content = format(&names);
        assert_eq!(parse(&content).unwrap(), names);
        assert_eq!(parse(b"").unwrap(), Vec::<String>::new());
        assert!(parse(&content[..content.len() - 1]).is_err());
        assert!(parse(b"a.ref\n\nb.ref\n").is_err());
        assert!(parse(b"../x.ref\n").is_err());
    }
}
