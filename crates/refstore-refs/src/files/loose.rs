//! Loose refs: one file per reference, `<hex id>\n` or `ref: <name>\n`.
//!
//! Reading is as tolerant as git: trailing whitespace and a missing newline
//! are accepted, hex may be upper case, and `ref:` may be followed by any
//! amount of whitespace. Writing produces exactly what git writes.

use crate::value::Target;
use crate::{ObjectFormat, ObjectId, RefName};

/// Why a loose ref file could not be read as a reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LooseError {
    /// Neither an object id nor `ref: <name>`.
    Malformed,
    /// `ref: <name>` with an invalid name.
    BadSymrefTarget(Vec<u8>),
}

impl std::fmt::Display for LooseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LooseError::Malformed => f.write_str("neither an object id nor 'ref: <name>'"),
            LooseError::BadSymrefTarget(t) => write!(
                f,
                "symbolic ref to the invalid name '{}'",
                String::from_utf8_lossy(t)
            ),
        }
    }
}

/// Parses the content of a loose ref file.
pub fn parse(content: &[u8], format: ObjectFormat) -> Result<Target, LooseError> {
    if let Some(rest) = content.strip_prefix(b"ref:") {
        let target = rest.trim_ascii();
        return RefName::new(target)
            .map(Target::Symbolic)
            .map_err(|_| LooseError::BadSymrefTarget(target.to_vec()));
    }
    let hex_len = format.hex_len();
    if content.len() < hex_len || !content[hex_len..].iter().all(u8::is_ascii_whitespace) {
        return Err(LooseError::Malformed);
    }
    let hex = content[..hex_len].to_ascii_lowercase();
    ObjectId::from_hex_in(&hex, format)
        .map(Target::Object)
        .map_err(|_| LooseError::Malformed)
}

/// The file content git writes for `target`.
pub fn format(target: &Target) -> Vec<u8> {
    let mut out = Vec::with_capacity(70);
    match target {
        Target::Object(id) => id.write_hex(&mut out),
        Target::Symbolic(name) => {
            out.extend_from_slice(b"ref: ");
            out.extend_from_slice(name.as_bytes());
        }
    }
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "2de75da42943063ef6b6a523169eb6a1b10a295d";

    #[test]
    fn tolerant_reading_exact_writing() {
        let id: ObjectId = HEX.parse().unwrap();
        for content in [
            format!("{HEX}\n"),
            HEX.to_string(),
            format!("{HEX}  \n"),
            HEX.to_uppercase(),
        ] {
            assert_eq!(
                parse(content.as_bytes(), ObjectFormat::Sha1),
                Ok(Target::Object(id))
            );
        }
        let main = Target::Symbolic(RefName::new("refs/heads/main").unwrap());
        for content in [
            "ref: refs/heads/main\n",
            "ref:refs/heads/main",
            "ref:  refs/heads/main \n",
        ] {
            assert_eq!(
                parse(content.as_bytes(), ObjectFormat::Sha1),
                Ok(main.clone())
            );
        }
        assert_eq!(format(&main), b"ref: refs/heads/main\n");
        assert_eq!(format(&Target::Object(id)), format!("{HEX}\n").as_bytes());
        for bad in ["", "\n", &format!("{HEX}x\n"), &HEX[1..], "ref: a..b\n"] {
            assert!(
                parse(bad.as_bytes(), ObjectFormat::Sha1).is_err(),
                "{bad:?}"
            );
        }
        assert!(parse(format!("{HEX}\n").as_bytes(), ObjectFormat::Sha256).is_err());
    }
}
