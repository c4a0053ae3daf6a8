//! The time a reflog line records when `GIT_COMMITTER_DATE` does not set
//! it: now, with the local time zone's offset, as git takes it from the C
//! library. The C library reads `TZ` or `/etc/localtime` once; a time zone
//! database that first walks all of `/usr/share/zoneinfo` would cost more
//! than the rest of a small transaction.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the epoch and the local offset from UTC in seconds.
pub(super) fn now_local() -> (i64, i32) {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs() as i64);
    (seconds, local_offset(seconds))
}

/// The local time zone's offset from UTC at `seconds` (0 if the C library
/// cannot tell).
#[allow(unsafe_code)]
fn local_offset(seconds: i64) -> i32 {
    // time_t is 64 bits on every target refstore builds for.
    let time = seconds as libc::time_t;
    // SAFETY: `tm` is a plain C struct for which all zeroes is a valid
    // value; `localtime_r` reads `time` and writes only into `tm`, both of
    // which live on this stack frame for the whole call, and it is the
    // thread-safe variant.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let converted = unsafe { libc::localtime_r(&time, &mut tm) };
    if converted.is_null() {
        0
    } else {
        tm.tm_gmtoff as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `date +%z`, the C library's own answer, in seconds.
    fn date_offset(at: i64) -> i32 {
        let out = std::process::Command::new("date")
            .arg(format!("--date=@{at}"))
            .arg("+%z")
            .output()
            .expect("date runs");
        let text = String::from_utf8(out.stdout).unwrap();
        let text = text.trim();
        let sign = if text.starts_with('-') { -1 } else { 1 };
        let hours: i32 = text[1..3].parse().unwrap();
        let minutes: i32 = text[3..5].parse().unwrap();
        sign * (hours * 3600 + minutes * 60)
    }

    #[test]
    fn the_offset_is_the_one_date_prints() {
        let (now, offset) = now_local();
        assert!(now > 1_700_000_000);
        assert_eq!(offset, date_offset(now));
        // Half a year apart, so a zone with summer time is seen in both.
        let later = now + 183 * 24 * 3600;
        assert_eq!(local_offset(later), date_offset(later));
    }
}
