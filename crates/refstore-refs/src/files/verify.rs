//! Consistency checks of a files-format ref store (`refs verify`): every
//! loose ref file, every line of `packed-refs`, and directory/file conflicts
//! between all refs. Findings use git's message ids (`badRefContent`,
//! `badPackedRefEntry`, ...) so tools that parse git's output read ours.
//!
//! The checks read bytes, not refs: a finding is reported for a file that
//! the normal read path would refuse or silently skip.

use super::FilesBackend;
use crate::{ObjectId, RefName};
use refstore_fs::FileKind;
use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The store is damaged: a ref is unreadable, wrong or shadowed.
    Error,
    /// Readable, but not in the canonical form git writes.
    Warning,
}

/// One problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// What is affected: a ref name, `packed-refs`, `packed-refs line N`.
    pub location: String,
    /// git's message id in camel case.
    pub id: &'static str,
    /// The complaint.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(
            f,
            "{level}: {}: {}: {}",
            self.location, self.id, self.message
        )
    }
}

struct Findings(Vec<Finding>);

impl Findings {
    fn push(&mut self, severity: Severity, location: &str, id: &'static str, message: String) {
        self.0.push(Finding {
            severity,
            location: location.to_owned(),
            id,
            message,
        });
    }
}

impl FilesBackend {
    /// Checks every loose ref, `packed-refs`, and name conflicts among all
    /// refs. Only I/O failures other than "missing" are errors of the call.
    pub fn verify(&self) -> Result<Vec<Finding>, refstore_fs::Error> {
        let mut findings = Findings(Vec::new());
        let mut names = BTreeSet::new();
        self.verify_loose_dir(
            &self.common_dir.join("refs"),
            b"refs/",
            &mut findings,
            &mut names,
        )?;
        self.verify_packed(&mut findings, &mut names)?;
        verify_conflicts(&names, &mut findings);
        Ok(findings.0)
    }

    fn verify_loose_dir(
        &self,
        dir: &Path,
        prefix: &[u8],
        findings: &mut Findings,
        names: &mut BTreeSet<Vec<u8>>,
    ) -> Result<(), refstore_fs::Error> {
        let mut entries = match self.vfs.read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e),
        };
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for entry in entries {
            let base = std::ffi::OsStr::as_encoded_bytes(&entry.name);
            let mut name = prefix.to_vec();
            name.extend_from_slice(base);
            let path = dir.join(&entry.name);
            let shown = String::from_utf8_lossy(&name).into_owned();
            match entry.kind {
                FileKind::Dir => {
                    name.push(b'/');
                    self.verify_loose_dir(&path, &name, findings, names)?;
                    continue;
                }
                // A writer's lock file, not a ref.
                _ if base.ends_with(b".lock") && base != b".lock" => continue,
                FileKind::Other => {
                    let message = "not a regular file or symlink".to_owned();
                    findings.push(Severity::Error, &shown, "badRefFiletype", message);
                    continue;
                }
                FileKind::File | FileKind::Symlink => {}
            }
            if RefName::new(&name).is_err() {
                let message = "invalid refname format".to_owned();
                findings.push(Severity::Error, &shown, "badRefName", message);
                continue;
            }
            names.insert(name.clone());
            if entry.kind == FileKind::Symlink {
                findings.push(
                    Severity::Warning,
                    &shown,
                    "symlinkRef",
                    "use deprecated symbolic link for symref".to_owned(),
                );
                let target = self.vfs.read_link(&path)?;
                let resolved = dir.join(target);
                let referent = normalize(&resolved)
                    .strip_prefix(&self.common_dir)
                    .map(|p| p.as_os_str().as_encoded_bytes().to_vec())
                    .unwrap_or_else(|_| resolved.as_os_str().as_encoded_bytes().to_vec());
                check_referent(&referent, &shown, findings);
                continue;
            }
            let content = match self.vfs.read(&path) {
                Ok(content) => content,
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e),
            };
            check_loose_content(&content, self.format.hex_len(), &shown, findings);
        }
        Ok(())
    }

    fn verify_packed(
        &self,
        findings: &mut Findings,
        names: &mut BTreeSet<Vec<u8>>,
    ) -> Result<(), refstore_fs::Error> {
        let path = self.packed_path();
        let kind = match self.vfs.stat(&path) {
            Ok(meta) => meta.kind,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e),
        };
        let not_regular = match kind {
            FileKind::File => None,
            FileKind::Symlink => Some("not a regular file but a symlink"),
            _ => Some("not a regular file"),
        };
        if let Some(message) = not_regular {
            findings.push(
                Severity::Error,
                "packed-refs",
                "badRefFiletype",
                message.to_owned(),
            );
            return Ok(());
        }
        let content = self.vfs.read(&path)?;
        check_packed(&content, self.format.hex_len(), findings, names);
        Ok(())
    }
}

/// Lexically resolves `.` and `..` in a symlink's target.
fn normalize(path: &Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A symbolic ref's target must be a valid name, and should be a ref.
fn check_referent(referent: &[u8], location: &str, findings: &mut Findings) {
    let text = String::from_utf8_lossy(referent);
    let valid = RefName::new(referent).is_ok();
    if !valid {
        let message = format!("points to invalid refname '{text}'");
        findings.push(Severity::Error, location, "badReferentName", message);
    } else if !referent.starts_with(b"refs/") && !crate::name::is_root_ref_syntax(referent) {
        let message = format!("points to non-ref target '{text}'");
        findings.push(
            Severity::Warning,
            location,
            "symrefTargetIsNotARef",
            message,
        );
    }
}

fn check_loose_content(content: &[u8], hex_len: usize, location: &str, findings: &mut Findings) {
    if let Some(rest) = content.strip_prefix(b"ref:") {
        let start = rest
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(rest.len());
        let rest = &rest[start..];
        let ends_with_lf = rest.last() == Some(&b'\n');
        if !ends_with_lf {
            let message = "misses LF at the end".to_owned();
            findings.push(Severity::Warning, location, "refMissingNewline", message);
        }
        let body = if ends_with_lf {
            &rest[..rest.len() - 1]
        } else {
            rest
        };
        let end = body
            .iter()
            .rposition(|b| !b.is_ascii_whitespace())
            .map_or(0, |i| i + 1);
        if end != body.len() {
            let message = "has trailing whitespaces or newlines".to_owned();
            findings.push(Severity::Warning, location, "trailingRefContent", message);
        }
        check_referent(&body[..end], location, findings);
        return;
    }
    let hex_ok = content.len() >= hex_len
        && ObjectId::from_hex(&content[..hex_len]).is_ok()
        && content.get(hex_len).is_none_or(|b| b.is_ascii_whitespace());
    if !hex_ok {
        let message = String::from_utf8_lossy(content).into_owned();
        findings.push(Severity::Error, location, "badRefContent", message);
        return;
    }
    match &content[hex_len..] {
        b"\n" => {}
        b"" => {
            let message = "misses LF at the end".to_owned();
            findings.push(Severity::Warning, location, "refMissingNewline", message);
        }
        rest => {
            let message = format!("has trailing garbage: '{}'", String::from_utf8_lossy(rest));
            findings.push(Severity::Warning, location, "trailingRefContent", message);
        }
    }
}

const HEADER: &[u8] = b"# pack-refs with: ";

fn check_packed(
    content: &[u8],
    hex_len: usize,
    findings: &mut Findings,
    names: &mut BTreeSet<Vec<u8>>,
) {
    if content.is_empty() {
        let message = "file is empty".to_owned();
        findings.push(
            Severity::Warning,
            "packed-refs",
            "emptyPackedRefsFile",
            message,
        );
        return;
    }
    let mut lines = content.split(|&b| b == b'\n').collect::<Vec<_>>();
    if lines.last() == Some(&&b""[..]) {
        lines.pop();
    }
    let mut sorted = false;
    let mut previous: Option<&[u8]> = None;
    for (i, line) in lines.iter().enumerate() {
        let location = format!("packed-refs line {}", i + 1);
        let text = String::from_utf8_lossy(line);
        if i == 0 && line.starts_with(b"#") {
            match line.strip_prefix(HEADER) {
                Some(traits) => {
                    sorted = traits.split(|&b| b == b' ').any(|t| t == b"sorted");
                }
                None => {
                    let message = format!("'{text}' does not start with '# pack-refs with: '");
                    findings.push(
                        Severity::Error,
                        "packed-refs.header",
                        "badPackedRefHeader",
                        message,
                    );
                }
            }
            continue;
        }
        if let Some(peeled) = line.strip_prefix(b"^") {
            let ok = peeled.len() >= hex_len && ObjectId::from_hex(&peeled[..hex_len]).is_ok();
            if !ok {
                let message = format!(
                    "'{}' has invalid peeled oid",
                    String::from_utf8_lossy(peeled)
                );
                findings.push(Severity::Error, &location, "badPackedRefEntry", message);
            } else if peeled.len() > hex_len {
                let rest = String::from_utf8_lossy(&peeled[hex_len..]);
                let message = format!("has trailing garbage after peeled oid '{rest}'");
                findings.push(Severity::Error, &location, "badPackedRefEntry", message);
            }
            continue;
        }
        if line.len() < hex_len || ObjectId::from_hex(&line[..hex_len]).is_err() {
            let message = format!("'{text}' has invalid oid");
            findings.push(Severity::Error, &location, "badPackedRefEntry", message);
            continue;
        }
        let rest = &line[hex_len..];
        let Some(name) = rest.strip_prefix(b" ") else {
            let oid = String::from_utf8_lossy(&line[..hex_len]);
            let rest = String::from_utf8_lossy(rest);
            let message = format!("has no space after oid '{oid}' but with '{rest}'");
            findings.push(Severity::Error, &location, "badPackedRefEntry", message);
            continue;
        };
        if RefName::new(name).is_err() {
            let message = format!("has bad refname '{}'", String::from_utf8_lossy(name));
            findings.push(Severity::Error, &location, "badRefName", message);
            continue;
        }
        if sorted {
            if let Some(prev) = previous.filter(|p| *p >= name) {
                let message = format!(
                    "refname '{}' is less than previous refname '{}'",
                    String::from_utf8_lossy(name),
                    String::from_utf8_lossy(prev)
                );
                findings.push(Severity::Error, &location, "packedRefUnsorted", message);
            }
        }
        previous = Some(name);
        names.insert(name.to_vec());
    }
}

/// A ref whose name is a directory prefix of another ref's name: one of the
/// two can never be read or written (git refuses such pairs when writing).
fn verify_conflicts(names: &BTreeSet<Vec<u8>>, findings: &mut Findings) {
    for name in names {
        for (i, _) in name.iter().enumerate().filter(|(_, &b)| b == b'/') {
            let prefix = &name[..i];
            if names.contains(prefix) {
                let message = format!(
                    "'{}' exists; cannot have both",
                    String::from_utf8_lossy(prefix)
                );
                let location = String::from_utf8_lossy(name).into_owned();
                findings.push(Severity::Error, &location, "refNameConflict", message);
                break;
            }
        }
    }
}
