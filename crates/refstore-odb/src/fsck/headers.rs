//! The checks of commits and tags: their headers (terminated, no NUL),
//! the ids they name, tag types and names, and the author, committer and
//! tagger identities.

use refstore_hash::ObjectId;
use refstore_refname::{check, CheckOptions};

use super::msg_id::MsgId;
use super::{Checker, Stop};
use crate::ObjectKind;

impl Checker<'_> {
    /// The headers of a commit or tag end with an empty line or at least a
    /// newline, and hold no NUL.
    fn headers(&mut self, data: &[u8]) -> Stop {
        for (i, &b) in data.iter().enumerate() {
            match b {
                0 => {
                    return self.report(
                        MsgId::NulInHeader,
                        format!("unterminated header: NUL at offset {i}"),
                    )
                }
                b'\n' if data.get(i + 1) == Some(&b'\n') => return Ok(()),
                _ => {}
            }
        }
        if data.last() == Some(&b'\n') {
            return Ok(());
        }
        self.report(MsgId::UnterminatedHeader, "unterminated header")
    }

    pub(super) fn commit(&mut self, data: &[u8]) {
        let _ = self.commit_checks(data);
    }

    fn commit_checks(&mut self, data: &[u8]) -> Stop {
        self.headers(data)?;
        let mut lines = Lines(data);
        let Some(tree) = lines.header(b"tree ") else {
            return self.report(MsgId::MissingTree, "invalid format - expected 'tree' line");
        };
        if !self.is_id(tree) {
            self.report(MsgId::BadTreeSha1, "invalid 'tree' line format - bad sha1")?;
        }
        while let Some(parent) = lines.header(b"parent ") {
            if !self.is_id(parent) {
                self.report(
                    MsgId::BadParentSha1,
                    "invalid 'parent' line format - bad sha1",
                )?;
            }
        }
        let mut authors = 0;
        while let Some(author) = lines.header(b"author ") {
            authors += 1;
            self.ident(author)?;
        }
        match authors {
            0 => self.report(
                MsgId::MissingAuthor,
                "invalid format - expected 'author' line",
            )?,
            1 => {}
            _ => self.report(
                MsgId::MultipleAuthors,
                "invalid format - multiple 'author' lines",
            )?,
        }
        let Some(committer) = lines.header(b"committer ") else {
            return self.report(
                MsgId::MissingCommitter,
                "invalid format - expected 'committer' line",
            );
        };
        self.ident(committer)?;
        if data.contains(&0) {
            self.report(MsgId::NulInCommit, "NUL byte in the commit object body")?;
        }
        Ok(())
    }

    pub(super) fn tag(&mut self, data: &[u8]) {
        let _ = self.tag_checks(data);
    }

    fn tag_checks(&mut self, data: &[u8]) -> Stop {
        self.headers(data)?;
        let mut lines = Lines(data);
        let Some(object) = lines.header(b"object ") else {
            return self.report(
                MsgId::MissingObject,
                "invalid format - expected 'object' line",
            );
        };
        if !self.is_id(object) {
            self.report(
                MsgId::BadObjectSha1,
                "invalid 'object' line format - bad sha1",
            )?;
        }
        let Some(kind) = lines.header_line(b"type ") else {
            return self.report(
                MsgId::MissingTypeEntry,
                "invalid format - expected 'type' line",
            );
        };
        let Some(kind) = kind else {
            return self.report(
                MsgId::MissingType,
                "invalid format - unexpected end after 'type' line",
            );
        };
        if ObjectKind::from_name(kind).is_none() {
            self.report(MsgId::BadType, "invalid 'type' value")?;
        }
        let Some(name) = lines.header_line(b"tag ") else {
            return self.report(
                MsgId::MissingTagEntry,
                "invalid format - expected 'tag' line",
            );
        };
        let Some(name) = name else {
            return self.report(
                MsgId::MissingTag,
                "invalid format - unexpected end after 'type' line",
            );
        };
        let mut full = b"refs/tags/".to_vec();
        full.extend_from_slice(name);
        let options = CheckOptions {
            allow_onelevel: false,
            refspec_pattern: false,
        };
        if check(&full, options).is_err() {
            self.report(
                MsgId::BadTagName,
                format!("invalid 'tag' name: {}", String::from_utf8_lossy(name)),
            )?;
        }
        match lines.header(b"tagger ") {
            Some(tagger) => self.ident(tagger)?,
            None => self.report(
                MsgId::MissingTaggerEntry,
                "invalid format - expected 'tagger' line",
            )?,
        }
        let gpgsig = lines
            .header_line(b"gpgsig ")
            .or_else(|| lines.header_line(b"gpgsig-sha256 "));
        if let Some(signature) = gpgsig {
            if signature.is_none() {
                return self.report(
                    MsgId::BadGpgsig,
                    "invalid format - unexpected end after 'gpgsig' or 'gpgsig-sha256' line",
                );
            }
            while lines.0.first() == Some(&b' ') {
                if lines.header_line(b" ") == Some(None) {
                    return self.report(
                        MsgId::BadHeaderContinuation,
                        "invalid format - unexpected end in 'gpgsig' or 'gpgsig-sha256' continuation line",
                    );
                }
            }
        }
        if !lines.0.is_empty() && lines.0[0] != b'\n' {
            self.report(
                MsgId::ExtraHeaderEntry,
                "invalid format - extra header(s) after 'tagger'",
            )?;
        }
        Ok(())
    }

    /// An id in hex, alone on its line.
    fn is_id(&self, line: &[u8]) -> bool {
        ObjectId::from_hex_in(line, self.format).is_ok()
    }

    /// `Name <email> <seconds> <+zone>` of an author, committer or tagger
    /// line (without its keyword and newline).
    fn ident(&mut self, line: &[u8]) -> Stop {
        const BAD: &str = "invalid author/committer line - ";
        if line.first() == Some(&b'<') {
            return self.report(
                MsgId::MissingNameBeforeEmail,
                format!("{BAD}missing space before email"),
            );
        }
        let Some(open) = line.iter().position(|&b| b == b'<' || b == b'>') else {
            return self.report(MsgId::MissingEmail, format!("{BAD}missing email"));
        };
        if line[open] == b'>' {
            return self.report(MsgId::BadName, format!("{BAD}bad name"));
        }
        if line[open - 1] != b' ' {
            return self.report(
                MsgId::MissingSpaceBeforeEmail,
                format!("{BAD}missing space before email"),
            );
        }
        let email = &line[open + 1..];
        let Some(close) = email.iter().position(|&b| b == b'<' || b == b'>') else {
            return self.report(MsgId::BadEmail, format!("{BAD}bad email"));
        };
        if email[close] == b'<' {
            return self.report(MsgId::BadEmail, format!("{BAD}bad email"));
        }
        let mut rest = &email[close + 1..];
        if rest.first() != Some(&b' ') {
            return self.report(
                MsgId::MissingSpaceBeforeDate,
                format!("{BAD}missing space before date"),
            );
        }
        while matches!(rest.first(), Some(b' ' | b'\t')) {
            rest = &rest[1..];
        }
        if !rest.first().is_some_and(u8::is_ascii_digit) {
            return self.report(MsgId::BadDate, format!("{BAD}bad date"));
        }
        if rest[0] == b'0' && rest.get(1) != Some(&b' ') {
            return self.report(MsgId::ZeroPaddedDate, format!("{BAD}zero-padded date"));
        }
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let date = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|d| d.parse::<u64>().ok());
        if date.is_none_or(|d| d > i64::MAX as u64) {
            return self.report(
                MsgId::BadDateOverflow,
                format!("{BAD}date causes integer overflow"),
            );
        }
        rest = &rest[digits..];
        if rest.first() != Some(&b' ') {
            return self.report(MsgId::BadDate, format!("{BAD}bad date"));
        }
        let zone = &rest[1..];
        let good_zone = zone.len() == 5
            && matches!(zone[0], b'+' | b'-')
            && zone[1..].iter().all(u8::is_ascii_digit);
        if !good_zone {
            return self.report(MsgId::BadTimezone, format!("{BAD}bad time zone"));
        }
        Ok(())
    }
}

/// Header lines of a commit or tag, read in order.
struct Lines<'a>(&'a [u8]);

impl<'a> Lines<'a> {
    /// The rest of the next line if it starts with `keyword` (consumed,
    /// with its newline). The headers were checked to end with a newline.
    fn header(&mut self, keyword: &[u8]) -> Option<&'a [u8]> {
        self.header_line(keyword).map(|line| line.unwrap_or(&[]))
    }

    /// Like [`header`](Self::header), telling a line cut short by the end
    /// of the object (`Some(None)`).
    fn header_line(&mut self, keyword: &[u8]) -> Option<Option<&'a [u8]>> {
        let rest = self.0.strip_prefix(keyword)?;
        match rest.iter().position(|&b| b == b'\n') {
            Some(end) => {
                self.0 = &rest[end + 1..];
                Some(Some(&rest[..end]))
            }
            None => {
                self.0 = &[];
                Some(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_one, commit, ID};
    use super::super::FsckOptions;
    use crate::ObjectKind;

    #[test]
    fn identity_lines() {
        let strict = FsckOptions::new(true);
        let cases = [
            ("A U Thor <a@x> 1700000000 +0000", vec![]),
            ("A<a@x> 1 +0000", vec!["E missingSpaceBeforeEmail"]),
            ("<a@x> 1 +0000", vec!["E missingNameBeforeEmail"]),
            ("A a@x 1 +0000", vec!["E missingEmail"]),
            ("A > <a@x> 1 +0000", vec!["E badName"]),
            ("A <a@x 1 +0000", vec!["E badEmail"]),
            ("A <a@x>1 +0000", vec!["E missingSpaceBeforeDate"]),
            ("A <a@x> x +0000", vec!["E badDate"]),
            ("A <a@x> 0123 +0000", vec!["E zeroPaddedDate"]),
            ("A <a@x> 0 +0000", vec![]),
            (
                "A <a@x> 99999999999999999999 +0000",
                vec!["E badDateOverflow"],
            ),
            ("A <a@x> 1 0000", vec!["E badTimezone"]),
            ("A <a@x> 1 +000", vec!["E badTimezone"]),
        ];
        for (author, expected) in cases {
            assert_eq!(
                check_one(ObjectKind::Commit, &commit(author), &strict),
                expected,
                "{author}"
            );
        }
    }

    #[test]
    fn commit_headers() {
        let strict = FsckOptions::new(true);
        let c = |s: &str| check_one(ObjectKind::Commit, s.as_bytes(), &strict);
        let who = "A <a@x> 1 +0000";
        assert_eq!(c(&format!("author {who}\n")), ["E missingTree"]);
        assert_eq!(
            c(&format!("tree 12\nauthor {who}\ncommitter {who}\n")),
            ["E badTreeSha1"]
        );
        assert_eq!(
            c(&format!(
                "tree {ID}\nparent x\nauthor {who}\ncommitter {who}\n"
            )),
            ["E badParentSha1"]
        );
        assert_eq!(
            c(&format!("tree {ID}\ncommitter {who}\n")),
            ["E missingAuthor"]
        );
        assert_eq!(
            c(&format!(
                "tree {ID}\nauthor {who}\nauthor {who}\ncommitter {who}\n"
            )),
            ["E multipleAuthors"]
        );
        assert_eq!(
            c(&format!("tree {ID}\nauthor {who}\n")),
            ["E missingCommitter"]
        );
        assert_eq!(
            c(&format!("tree {ID}\nauthor {who}\ncommitter {who}")),
            ["E unterminatedHeader"]
        );
        assert_eq!(
            c(&format!("tree {ID}\0\nauthor {who}\n")),
            ["E nulInHeader"]
        );
        assert_eq!(
            c(&format!(
                "tree {ID}\nauthor {who}\ncommitter {who}\n\nbody\0"
            )),
            ["E nulInCommit"]
        );
        let mut lenient = FsckOptions::new(false);
        assert_eq!(
            check_one(
                ObjectKind::Commit,
                format!("tree {ID}\nauthor {who}\ncommitter {who}\n\nbody\0").as_bytes(),
                &lenient
            ),
            ["W nulInCommit"]
        );
        lenient.set("badTreeSha1", "ignore").unwrap();
        assert_eq!(
            check_one(
                ObjectKind::Commit,
                format!("tree 12\nauthor {who}\ncommitter {who}\n").as_bytes(),
                &lenient
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn tags() {
        let strict = FsckOptions::new(true);
        let t = |s: String| check_one(ObjectKind::Tag, s.as_bytes(), &strict);
        let who = "T <t@x> 1 +0000";
        assert_eq!(
            t(format!(
                "object {ID}\ntype commit\ntag v1\ntagger {who}\n\nm\n"
            )),
            Vec::<String>::new()
        );
        assert_eq!(t("type commit\n".to_owned()), ["E missingObject"]);
        assert_eq!(
            t("object zz\ntype commit\n".to_owned()),
            ["E badObjectSha1"]
        );
        assert_eq!(t(format!("object {ID}\ntag v1\n")), ["E missingTypeEntry"]);
        assert_eq!(
            t(format!("object {ID}\ntype thing\ntag v1\n")),
            ["E badType"]
        );
        assert_eq!(
            t(format!("object {ID}\ntype commit\ntagger {who}\n")),
            ["E missingTagEntry"]
        );
        assert_eq!(
            t(format!(
                "object {ID}\ntype commit\ntag a..b\ntagger {who}\n"
            )),
            ["W badTagName"]
        );
        assert_eq!(
            t(format!("object {ID}\ntype commit\ntag v1\n\nm\n")),
            ["W missingTaggerEntry"]
        );
        assert_eq!(
            t(format!(
                "object {ID}\ntype commit\ntag v1\ntagger T t@x 1 +0000\n"
            )),
            ["E missingEmail"]
        );
    }
}
