//! Expiry settings as git writes them (`gc.pruneExpire` and friends):
//! `now`, `never`, or an approximate date `<n>.<unit>[s].ago` with units
//! from seconds to years (`2.weeks.ago`, `1.hour.ago`); a plain number
//! is taken as seconds ago.

use std::time::Duration;

/// How old something must be before it may be removed; `None` is "never".
pub type Expiry = Option<Duration>;

/// Parses an expiry value; `None` in the result means "never".
pub fn parse(value: &str) -> Result<Expiry, String> {
    let text = value.trim().to_ascii_lowercase();
    match text.as_str() {
        "now" => return Ok(Some(Duration::ZERO)),
        "never" | "false" => return Ok(None),
        _ => {}
    }
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Some(Duration::from_secs(seconds)));
    }
    let bad = || format!("invalid expiry date '{value}'");
    let mut parts = text.split(['.', ' ']).filter(|p| !p.is_empty());
    let count: u64 = parts.next().and_then(|n| n.parse().ok()).ok_or_else(bad)?;
    let unit = parts.next().ok_or_else(bad)?;
    match parts.next() {
        Some("ago") | None => {}
        Some(_) => return Err(bad()),
    }
    if parts.next().is_some() {
        return Err(bad());
    }
    let unit = unit.strip_suffix('s').unwrap_or(unit);
    let seconds = match unit {
        "second" | "sec" => 1,
        "minute" | "min" => 60,
        "hour" => 3600,
        "day" => 86_400,
        "week" => 7 * 86_400,
        "month" => 30 * 86_400,
        "year" => 365 * 86_400,
        _ => return Err(bad()),
    };
    Ok(Some(Duration::from_secs(count.saturating_mul(seconds))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_forms_parse() {
        assert_eq!(parse("now"), Ok(Some(Duration::ZERO)));
        assert_eq!(parse("never"), Ok(None));
        assert_eq!(
            parse("2.weeks.ago"),
            Ok(Some(Duration::from_secs(14 * 86_400)))
        );
        assert_eq!(parse("1.hour.ago"), Ok(Some(Duration::from_secs(3600))));
        assert_eq!(parse("90"), Ok(Some(Duration::from_secs(90))));
        assert!(parse("soon").is_err());
        assert!(parse("2.fortnights.ago").is_err());
    }
}
