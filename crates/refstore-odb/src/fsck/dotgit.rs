//! Names that a filesystem reads as `.git`, `.gitmodules` and the like:
//! HFS+ ignores some invisible code points and case, NTFS drops trailing
//! dots and spaces and has 8.3 short names (`git~1`, `gi7eba~1`).

/// Code points HFS+ ignores in names.
fn hfs_ignored(c: char) -> bool {
    matches!(
        c,
        '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}'
    )
}

/// True if HFS+ reads `name` as `.` followed by `needle` (ASCII,
/// lowercase), case-insensitively and ignoring invisible code points,
/// possibly followed by a directory separator.
pub(super) fn is_hfs_dot(name: &[u8], needle: &[u8]) -> bool {
    let Ok(name) = std::str::from_utf8(name) else {
        return false;
    };
    let mut chars = name.chars().filter(|&c| !hfs_ignored(c));
    if chars.next() != Some('.') {
        return false;
    }
    for &expected in needle {
        match chars.next() {
            Some(c) if c.is_ascii() && c.to_ascii_lowercase() as u8 == expected => {}
            _ => return false,
        }
    }
    matches!(chars.next(), None | Some('/'))
}

/// True if NTFS reads `name` as `.git` (or its short name `git~1`),
/// trailing dots and spaces dropped, up to a separator or a stream name.
pub(super) fn is_ntfs_dotgit(name: &[u8]) -> bool {
    let rest = if name.first() == Some(&b'.') {
        match name.get(1..4) {
            Some(g) if g.eq_ignore_ascii_case(b"git") => &name[4..],
            _ => return false,
        }
    } else {
        match name.get(..5) {
            Some(g) if g[..3].eq_ignore_ascii_case(b"git") && &g[3..] == b"~1" => &name[5..],
            _ => return false,
        }
    };
    for &c in rest {
        match c {
            b'/' | b'\\' | b':' => return true,
            b'.' | b' ' => {}
            _ => return false,
        }
    }
    true
}

/// True if NTFS reads `name` as `.<needle>`: spelled out, as its regular
/// 8.3 short name (six letters, `~1` to `~4`) or its fall-back short name
/// (`short_prefix`, `~`, digits), trailing dots and spaces dropped.
pub(super) fn is_ntfs_dot(name: &[u8], needle: &[u8], short_prefix: &[u8]) -> bool {
    let only_dots_and_spaces = |rest: &[u8]| {
        for &c in rest {
            match c {
                b':' => return true,
                b'.' | b' ' => {}
                _ => return false,
            }
        }
        true
    };
    if name.first() == Some(&b'.')
        && name.len() > needle.len()
        && name[1..=needle.len()].eq_ignore_ascii_case(needle)
    {
        return only_dots_and_spaces(&name[needle.len() + 1..]);
    }
    if name.len() >= 8
        && name[..6].eq_ignore_ascii_case(&needle[..6])
        && name[6] == b'~'
        && (b'1'..=b'4').contains(&name[7])
    {
        return only_dots_and_spaces(&name[8..]);
    }
    // The fall-back short name: up to six letters of the prefix, `~`, a
    // digit from 1, more digits, eight characters in all.
    if name.len() < 8 {
        return false;
    }
    let mut saw_tilde = false;
    let mut i = 0;
    while i < 8 {
        let c = name[i];
        if saw_tilde {
            if !c.is_ascii_digit() {
                return false;
            }
        } else if c == b'~' {
            i += 1;
            if i >= 8 || !(b'1'..=b'9').contains(&name[i]) {
                return false;
            }
            saw_tilde = true;
        } else if i >= 6 || c >= 0x80 || c.to_ascii_lowercase() != short_prefix[i] {
            return false;
        }
        i += 1;
    }
    only_dots_and_spaces(&name[8..])
}

/// `.gitmodules` and the like, as HFS+ or NTFS may spell them.
pub(super) fn is_dot_special(name: &[u8], needle: &[u8], short_prefix: &[u8]) -> bool {
    is_hfs_dot(name, needle) || is_ntfs_dot(name, needle, short_prefix)
}
