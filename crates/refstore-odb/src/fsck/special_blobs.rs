//! The content checks of the blobs trees name `.gitmodules` (submodule
//! names, urls, paths and update commands git refuses) and
//! `.gitattributes` (files and lines too long for git to read), and of
//! such blobs too large to read.

use super::msg_id::MsgId;
use super::Checker;

/// Largest `.gitattributes` git reads (`gitattributesLarge`).
const MAX_ATTRIBUTES_SIZE: usize = 100 << 20;
/// Longest `.gitattributes` line git reads (`gitattributesLineLength`).
const MAX_ATTRIBUTES_LINE: usize = 2048;

impl Checker<'_> {
    /// Whether the object is a blob too large to read.
    pub(super) fn is_large(&self) -> bool {
        self.special
            .as_deref()
            .is_some_and(|special| special.large.contains(&self.id))
    }

    /// The checks of a blob too large to read, if a tree names it
    /// `.gitmodules` or `.gitattributes`: git does not parse it, and says so.
    pub(super) fn large_blob(&mut self) {
        let Some(special) = self.special.as_deref_mut() else {
            return;
        };
        let modules = special.gitmodules.contains(&self.id);
        let attributes = special.gitattributes.contains(&self.id);
        if !modules && !attributes {
            return;
        }
        special.done.insert(self.id);
        if modules {
            let _ = self.report(MsgId::GitmodulesLarge, ".gitmodules too large to parse");
        }
        if attributes {
            let _ = self.report(
                MsgId::GitattributesLarge,
                ".gitattributes too large to parse",
            );
        }
    }

    /// The content checks of a blob a tree names `.gitmodules` or
    /// `.gitattributes` (none for other blobs).
    pub(super) fn special_blob(&mut self, data: &[u8]) {
        let Some(special) = self.special.as_deref_mut() else {
            return;
        };
        let modules = special.gitmodules.contains(&self.id);
        let attributes = special.gitattributes.contains(&self.id);
        if !modules && !attributes {
            return;
        }
        special.done.insert(self.id);
        if modules {
            self.gitmodules(data);
        }
        if attributes {
            if data.len() > MAX_ATTRIBUTES_SIZE {
                let _ = self.report(
                    MsgId::GitattributesLarge,
                    ".gitattributes too large to parse",
                );
                return;
            }
            // git reads the file as a C string: up to a NUL.
            let text = data.split(|&b| b == 0).next().unwrap_or_default();
            if text
                .split(|&b| b == b'\n')
                .any(|line| line.len() >= MAX_ATTRIBUTES_LINE)
            {
                let _ = self.report(
                    MsgId::GitattributesLineLength,
                    ".gitattributes has too long lines to parse",
                );
            }
        }
    }

    fn gitmodules(&mut self, data: &[u8]) {
        let file = match gix_config::File::from_bytes_no_includes(
            data,
            gix_config::file::Metadata::api(),
            gix_config::file::init::Options::default(),
        ) {
            Ok(file) => file,
            Err(_) => {
                let _ = self.report(MsgId::GitmodulesParse, "could not parse gitmodules blob");
                return;
            }
        };
        let mut problems = Vec::new();
        for section in file.sections() {
            let header = section.header();
            if !header.name().eq_ignore_ascii_case(b"submodule") {
                continue;
            }
            let Some(name) = header.subsection_name() else {
                continue;
            };
            let name: &[u8] = name.as_ref();
            let body = section.body();
            for key in body.value_names().collect::<Vec<_>>() {
                // git checks the name once per variable of the section.
                if !is_submodule_name_ok(name) {
                    problems.push((
                        MsgId::GitmodulesName,
                        format!(
                            "disallowed submodule name: {}",
                            String::from_utf8_lossy(name)
                        ),
                    ));
                }
                for value in body.values(&key) {
                    let value: &[u8] = value.as_ref();
                    let shown = String::from_utf8_lossy(value);
                    match key.to_ascii_lowercase().as_str() {
                        "url" if !is_submodule_url_ok(value) => problems.push((
                            MsgId::GitmodulesUrl,
                            format!("disallowed submodule url: {shown}"),
                        )),
                        "path" if value.first() == Some(&b'-') => problems.push((
                            MsgId::GitmodulesPath,
                            format!("disallowed submodule path: {shown}"),
                        )),
                        "update" if value.first() == Some(&b'!') => problems.push((
                            MsgId::GitmodulesUpdate,
                            format!("disallowed submodule update setting: {shown}"),
                        )),
                        _ => {}
                    }
                }
            }
        }
        for (msg_id, text) in problems {
            let _ = self.report(msg_id, text);
        }
    }
}

/// git's rule for submodule names: not empty, no `..` component (with
/// slash or backslash as separators).
fn is_submodule_name_ok(name: &[u8]) -> bool {
    !name.is_empty()
        && !name
            .split(|&b| b == b'/' || b == b'\\')
            .any(|component| component == b"..")
}

/// git's rule for submodule urls: not an option; a relative or `git://`
/// url holds no newline once percent-decoded and does not climb out of its
/// root with `../` up to a `:` or `/`; an http(s) or ftp(s) url holds no
/// newline once decoded. (git also refuses http urls its normalisation
/// rejects; that check is not made here.)
fn is_submodule_url_ok(url: &[u8]) -> bool {
    if url.first() == Some(&b'-') {
        return false;
    }
    let dot_slash = |u: &[u8]| u.len() >= 2 && u[0] == b'.' && matches!(u[1], b'/' | b'\\');
    let dot_dot_slash = |u: &[u8]| u.len() >= 3 && u[0] == b'.' && dot_slash(&u[1..]);
    if dot_slash(url) || dot_dot_slash(url) || url.starts_with(b"git://") {
        if percent_decode(url).contains(&b'\n') {
            return false;
        }
        let mut rest = url;
        let mut climbs = 0;
        loop {
            if dot_dot_slash(rest) {
                climbs += 1;
                rest = &rest[3..];
            } else if dot_slash(rest) {
                rest = &rest[2..];
            } else {
                break;
            }
        }
        return !(climbs > 0 && matches!(rest.first(), Some(b':' | b'/')));
    }
    let curl = [&b"http://"[..], b"https://", b"ftp://", b"ftps://"];
    if curl.iter().any(|scheme| url.starts_with(scheme)) {
        return !percent_decode(url).contains(&b'\n');
    }
    true
}

/// `%XX` sequences decoded; anything else kept as it is.
fn percent_decode(text: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'%' && i + 2 < text.len() {
            if let (Some(high), Some(low)) = (hex(text[i + 1]), hex(text[i + 2])) {
                out.push((high * 16 + low) as u8);
                i += 3;
                continue;
            }
        }
        out.push(text[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Fsck, FsckOptions, MsgId};
    use crate::ObjectKind;
    use refstore_hash::{ObjectFormat, ObjectId};

    #[test]
    fn gitmodules_blobs() {
        let strict = FsckOptions::new(true);
        let blob = ObjectId::from_hex_in(
            b"2222222222222222222222222222222222222222",
            ObjectFormat::Sha1,
        )
        .unwrap();
        let tree_id = ObjectId::from_hex_in(
            b"3333333333333333333333333333333333333333",
            ObjectFormat::Sha1,
        )
        .unwrap();
        let mut tree = b"100644 .gitmodules\0".to_vec();
        tree.extend_from_slice(blob.as_bytes());
        let judge = |content: &[u8]| {
            let mut fsck = Fsck::new(&strict);
            let mut findings = Vec::new();
            assert!(!fsck.check(&tree_id, ObjectKind::Tree, &tree, &mut findings));
            let refused = fsck.finish(
                |id| (*id == blob).then(|| (ObjectKind::Blob, content.to_vec())),
                &mut findings,
            );
            assert_eq!(refused, findings.iter().any(|f| f.is_error));
            findings.iter().map(|f| f.msg_id.name()).collect::<Vec<_>>()
        };
        assert_eq!(
            judge(b"[submodule \"a\"]\n\turl = ./a\n\tpath = a\n"),
            Vec::<&str>::new()
        );
        assert_eq!(
            judge(b"[submodule \"a/../..\"]\n\turl = ./a\n"),
            ["gitmodulesName"]
        );
        assert_eq!(
            judge(b"[submodule \"a\"]\n\turl = --upload-pack=x\n"),
            ["gitmodulesUrl"]
        );
        assert_eq!(
            judge(b"[submodule \"a\"]\n\turl = https://h/%0a\n"),
            ["gitmodulesUrl"]
        );
        assert_eq!(
            judge(b"[submodule \"a\"]\n\turl = ../../../x\n"),
            Vec::<&str>::new()
        );
        assert_eq!(
            judge(b"[submodule \"a\"]\n\turl = ./../../:x\n"),
            ["gitmodulesUrl"]
        );
        assert_eq!(
            judge(b"[submodule \"a\"]\n\tpath = --x\n"),
            ["gitmodulesPath"]
        );
        assert_eq!(
            judge(b"[submodule \"a\"]\n\tupdate = !sh\n"),
            ["gitmodulesUpdate"]
        );
        assert_eq!(judge(b"[submodule"), ["gitmodulesParse"]);
        // Not in the push nor in the repository.
        let mut fsck = Fsck::new(&strict);
        let mut findings = Vec::new();
        fsck.check(&tree_id, ObjectKind::Tree, &tree, &mut findings);
        assert!(fsck.finish(|_| None, &mut findings));
        assert_eq!(findings[0].msg_id, MsgId::GitmodulesMissing);
    }
}
