//! What the client asked of the pack's form, as plan and writer need it.

/// How the client wants the pack.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PackRequest {
    /// Progress messages are sent on band 2 (no `no-progress`).
    pub progress: bool,
    /// The pack may be thin (`thin-pack`): deltas against objects the
    /// client has.
    pub thin: bool,
    /// A delta may name its base by offset (`ofs-delta`); otherwise by id.
    pub ofs_delta: bool,
}
