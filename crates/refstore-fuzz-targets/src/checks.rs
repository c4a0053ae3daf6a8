//! What every target shares: the object formats inputs are tried in, and
//! the check on a parser's error message.

/// Both object formats: inputs are tried in each, since a server or a
/// store of either kind reads them.
pub(crate) const FORMATS: [refstore_refs::ObjectFormat; 2] = [
    refstore_refs::ObjectFormat::Sha1,
    refstore_refs::ObjectFormat::Sha256,
];

/// Fails the target if a parser's error message says nothing.
pub(crate) fn check_message(message: &str) {
    assert!(
        !message.trim().is_empty(),
        "a parser failed without saying why"
    );
}
