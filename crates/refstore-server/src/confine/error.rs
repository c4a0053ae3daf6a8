//! Why a path a client chose was refused.

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfineError {
    /// The relative path names a parent, an absolute path or an empty or
    /// hidden-by-dot component.
    Malformed,
    /// Links loop or nest deeper than the kernel would follow.
    TooManyLinks,
    /// After following links the path leaves the root.
    Escapes,
    /// No git repository at the path nor at git's variants of it.
    NotARepository,
}

impl std::fmt::Display for ConfineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ConfineError::Malformed => "the path must be relative and must not contain '..'",
            ConfineError::TooManyLinks => "too many levels of symbolic links",
            ConfineError::Escapes => "the path leads outside the served directory",
            ConfineError::NotARepository => "not a git repository",
        })
    }
}

impl std::error::Error for ConfineError {}
