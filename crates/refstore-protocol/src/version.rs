//! Which version of the wire protocol a client asked for.
//!
//! A client names the version out of band: the `GIT_PROTOCOL` environment
//! variable over ssh and file://, the `Git-Protocol` header over HTTP. Its
//! value is a colon-separated list of `key[=value]` parameters, of which
//! `version=<n>` matters here; unknown parameters are ignored, as git does,
//! so a newer client can pass more.

/// A protocol version a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum ProtocolVersion {
    /// The original protocol: the server advertises its refs at once.
    #[default]
    V0,
    /// Version 0 preceded by a `version 1` line.
    V1,
    /// Command-based protocol v2: capabilities first, then `ls-refs` and
    /// `fetch` requests.
    V2,
}

impl ProtocolVersion {
    /// The version a `GIT_PROTOCOL` value asks for: the highest
    /// `version=<n>` this server knows (git's clients send one; when several
    /// are given the best supported wins). `None` or a value without a known
    /// version means version 0.
    pub fn from_git_protocol(value: Option<&str>) -> ProtocolVersion {
        value
            .into_iter()
            .flat_map(|value| value.split(':'))
            .filter_map(|parameter| match parameter.strip_prefix("version=")? {
                "0" => Some(ProtocolVersion::V0),
                "1" => Some(ProtocolVersion::V1),
                "2" => Some(ProtocolVersion::V2),
                _ => None,
            })
            .max()
            .unwrap_or_default()
    }

    /// The version's number, as written in `version=<n>`.
    pub fn number(self) -> u8 {
        match self {
            ProtocolVersion::V0 => 0,
            ProtocolVersion::V1 => 1,
            ProtocolVersion::V2 => 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ProtocolVersion::{self, *};

    #[test]
    fn parses_git_protocol_values() {
        let cases: &[(Option<&str>, ProtocolVersion)] = &[
            (None, V0),
            (Some(""), V0),
            (Some("version=2"), V2),
            (Some("version=1"), V1),
            (Some("version=0"), V0),
            (Some("version=2:object-format=sha256"), V2),
            (Some("foo=bar:version=1"), V1),
            (Some("version=3"), V0),
            (Some("version=1:version=2"), V2),
            (Some("version2"), V0),
        ];
        for (value, expected) in cases {
            assert_eq!(
                ProtocolVersion::from_git_protocol(*value),
                *expected,
                "{value:?}"
            );
        }
    }

    #[test]
    fn numbers() {
        assert_eq!(V2.number(), 2);
        assert_eq!(V1.number(), 1);
        assert_eq!(V0.number(), 0);
    }
}
