//! Reflogs of the files backend: `logs/<ref>`, one line per update.
//!
//! `<old hex> <new hex> <Name> <<email>> <seconds> <+hhmm>[\t<message>]\n`,
//! the message with runs of whitespace folded into one space, as git writes.

use crate::ObjectId;
use refstore_fs::config::LogRefUpdates;

/// Whether an update of `name` starts a reflog that does not exist yet.
pub fn autocreates(policy: LogRefUpdates, name: &[u8]) -> bool {
    match policy {
        LogRefUpdates::Never => false,
        LogRefUpdates::Always => true,
        LogRefUpdates::Branches => {
            name == b"HEAD"
                || [&b"refs/heads/"[..], b"refs/remotes/", b"refs/notes/"]
                    .iter()
                    .any(|p| name.starts_with(p))
        }
    }
}

/// One reflog line.
pub fn line(old: &ObjectId, new: &ObjectId, signature: &str, message: Option<&str>) -> Vec<u8> {
    let mut out = Vec::with_capacity(160);
    old.write_hex(&mut out);
    out.push(b' ');
    new.write_hex(&mut out);
    out.push(b' ');
    out.extend_from_slice(signature.as_bytes());
    let folded: Vec<&str> = message.unwrap_or("").split_whitespace().collect();
    if !folded.is_empty() {
        out.push(b'\t');
        out.extend_from_slice(folded.join(" ").as_bytes());
    }
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ObjectFormat;

    #[test]
    fn lines_like_git() {
        let z = ObjectFormat::Sha1.null_id();
        let a: ObjectId = "1111111111111111111111111111111111111111".parse().unwrap();
        let sig = "C O Mitter <c@example.com> 1700000000 +0130";
        assert_eq!(
            String::from_utf8(line(&z, &a, sig, Some("  multi\nline   msg "))).unwrap(),
            format!("{} {a} {sig}\tmulti line msg\n", z)
        );
        assert_eq!(
            String::from_utf8(line(&z, &a, sig, None)).unwrap(),
            format!("{z} {a} {sig}\n")
        );
        assert!(autocreates(LogRefUpdates::Branches, b"refs/heads/x"));
        assert!(!autocreates(LogRefUpdates::Branches, b"refs/tags/x"));
        assert!(autocreates(LogRefUpdates::Always, b"refs/tags/x"));
    }
}
