//! Reflog entries as reftable log records: the committer signature split
//! into its fields, the message cleaned as git cleans it.

use super::log_record::{LogEntry, LogRecord, LogValue};
use crate::ObjectId;

/// The log record of one update of `name` in transaction `update_index`.
///
/// `signature` is `Name <email> <seconds> <+hhmm>`, as the files backend
/// writes it. The message has its runs of whitespace folded to one space
/// and, when not empty, one trailing newline, as git stores it in reftables.
pub fn record(
    name: &[u8],
    update_index: u64,
    old_id: ObjectId,
    new_id: ObjectId,
    signature: &str,
    message: Option<&str>,
) -> LogRecord {
    let (committer_name, email, time, tz_offset) = split_signature(signature);
    let folded: Vec<&str> = message.unwrap_or("").split_whitespace().collect();
    let mut message = folded.join(" ").into_bytes();
    if !message.is_empty() {
        message.push(b'\n');
    }
    LogRecord {
        name: name.to_vec(),
        update_index,
        value: LogValue::Update(LogEntry {
            old_id,
            new_id,
            committer_name: committer_name.into_bytes(),
            email: email.into_bytes(),
            time,
            tz_offset,
            message,
        }),
    }
}

/// Name, email, seconds and minutes east of GMT from a signature; parts
/// that are missing or malformed read as empty or zero.
fn split_signature(signature: &str) -> (String, String, u64, i16) {
    let (who, when) = match signature.rfind('>') {
        Some(end) => signature.split_at(end + 1),
        None => (signature, ""),
    };
    let (name, email) = match who.find('<') {
        Some(start) => (
            who[..start].trim_end(),
            who[start + 1..].trim_end_matches('>'),
        ),
        None => (who.trim(), ""),
    };
    let mut fields = when.split_whitespace();
    let time = fields.next().and_then(|t| t.parse().ok()).unwrap_or(0);
    let tz_offset = fields.next().map_or(0, parse_tz);
    (name.to_owned(), email.to_owned(), time, tz_offset)
}

/// `+hhmm` or `-hhmm` as minutes east of GMT.
fn parse_tz(tz: &str) -> i16 {
    let (sign, digits) = match tz.strip_prefix('-') {
        Some(d) => (-1, d),
        None => (1, tz.strip_prefix('+').unwrap_or(tz)),
    };
    let value: i16 = digits.parse().unwrap_or(0);
    sign * (value / 100 * 60 + value % 100)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ObjectFormat;

    #[test]
    fn signatures_and_messages_as_git_stores_them() {
        let null = ObjectFormat::Sha1.null_id();
        let record = record(
            b"refs/heads/main",
            7,
            null,
            null,
            "C O Mitter <c@example.com> 1700000000 -0230",
            Some("  two\n lines "),
        );
        let LogValue::Update(entry) = record.value else {
            panic!("an update");
        };
        assert_eq!(entry.committer_name, b"C O Mitter");
        assert_eq!(entry.email, b"c@example.com");
        assert_eq!(entry.time, 1_700_000_000);
        assert_eq!(entry.tz_offset, -150);
        assert_eq!(entry.message, b"two lines\n");
        assert_eq!(record.update_index, 7);
    }
}
