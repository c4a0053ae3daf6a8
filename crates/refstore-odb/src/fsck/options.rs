//! What a check reports and how the configuration changes it:
//! severities per message id (`receive.fsck.<msg-id>`), strict mode and
//! the objects skipped (`receive.fsck.skipList`).

use refstore_hash::ObjectId;
use std::collections::HashSet;

use super::msg_id::{MsgId, Severity, MSG_IDS};

/// Severities and skipped objects.
#[derive(Debug, Clone)]
pub struct FsckOptions {
    severities: Vec<Severity>,
    pub(super) strict: bool,
    pub(super) skip: HashSet<ObjectId>,
}

impl FsckOptions {
    /// git's defaults; `strict` (as for pushes) makes warnings errors.
    pub fn new(strict: bool) -> Self {
        let severities = MSG_IDS
            .iter()
            .map(|&(_, _, severity)| match severity {
                Severity::Warn if strict => Severity::Error,
                other => other,
            })
            .collect();
        FsckOptions {
            severities,
            strict,
            skip: HashSet::new(),
        }
    }

    /// Sets the severity of message id `name` to `value` (`error`, `warn`
    /// or `ignore`), as `receive.fsck.<name>` does. The error is git's
    /// message for a value it refuses.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let id = MsgId::from_name(name).ok_or_else(|| format!("Unhandled message id: {name}"))?;
        let severity = match value {
            "error" => Severity::Error,
            "warn" => Severity::Warn,
            "ignore" => Severity::Ignore,
            _ => return Err(format!("Unknown fsck message type: '{value}'")),
        };
        if id.default_severity() == Severity::Fatal && severity != Severity::Error {
            return Err(format!("Cannot demote {name} to {value}"));
        }
        self.severities[id as usize] = severity;
        Ok(())
    }

    /// Skips every check of object `id` (`receive.fsck.skipList`).
    pub fn skip(&mut self, id: ObjectId) {
        self.skip.insert(id);
    }

    pub(super) fn severity(&self, id: MsgId) -> Severity {
        self.severities[id as usize]
    }
}

/// One problem found in an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The object.
    pub object: ObjectId,
    /// What is wrong.
    pub msg_id: MsgId,
    /// True if it refuses the object, false for a warning.
    pub is_error: bool,
    /// git's description.
    pub text: String,
}

impl std::fmt::Display for Finding {
    /// git's form: `object <id>: <msgId>: <text>`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "object {}: {}: {}",
            self.object,
            self.msg_id.name(),
            self.text
        )
    }
}
