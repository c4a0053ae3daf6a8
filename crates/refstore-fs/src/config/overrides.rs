//! Configuration given on the command line (`-c name=value`) and passed to
//! child processes in `GIT_CONFIG_PARAMETERS`, as git does.

use super::error::ConfigError;

/// One `name=value` override; `value` is `None` for `-c name` (true).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    /// The key, e.g. `core.fsync` or `url.https://x/.insteadOf`.
    pub key: String,
    /// The value, `None` for a bare key.
    pub value: Option<String>,
}

/// Parses the argument of `-c`.
pub fn parse_cli(arg: &str) -> Result<Override, ConfigError> {
    let (key, value) = match arg.split_once('=') {
        Some((k, v)) => (k, Some(v.to_owned())),
        None => (arg, None),
    };
    if key.is_empty() {
        return Err(ConfigError::new(format!("bogus config parameter: {arg}")));
    }
    if !key.contains('.') || key.starts_with('.') || key.ends_with('.') {
        return Err(ConfigError::new(format!(
            "key does not contain a section: {key}"
        )));
    }
    Ok(Override {
        key: key.to_owned(),
        value,
    })
}

/// Parses `GIT_CONFIG_PARAMETERS`: shell-single-quoted words, each either
/// `'key=value'` or `'key'='value'` (or `'key'` alone).
pub fn parse_parameters(text: &str) -> Result<Vec<Override>, ConfigError> {
    let bogus = || ConfigError::new("bogus format in GIT_CONFIG_PARAMETERS".to_owned());
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let (key_word, after) = quoted_word(rest).ok_or_else(bogus)?;
        rest = after;
        let item = if let Some(after_eq) = rest.strip_prefix('=') {
            let (value, after) = quoted_word(after_eq).ok_or_else(bogus)?;
            rest = after;
            Override {
                key: key_word,
                value: Some(value),
            }
        } else {
            parse_cli(&key_word)?
        };
        out.push(item);
        if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
            return Err(bogus());
        }
        rest = rest.trim_start();
    }
    Ok(out)
}

/// Reads one word of adjacent single-quoted strings and `\x` escapes (the
/// form git's `sq_quote` produces: `'it'\''s'`).
fn quoted_word(mut s: &str) -> Option<(String, &str)> {
    let mut word = String::new();
    let mut any = false;
    loop {
        if let Some(inner) = s.strip_prefix('\'') {
            let end = inner.find('\'')?;
            word.push_str(&inner[..end]);
            s = &inner[end + 1..];
            any = true;
        } else if let Some(escaped) = s.strip_prefix('\\') {
            let c = escaped.chars().next()?;
            word.push(c);
            s = &escaped[c.len_utf8()..];
            any = true;
        } else {
            return any.then_some((word, s));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_forms() {
        assert_eq!(
            parse_cli("core.fsync=none").unwrap(),
            Override {
                key: "core.fsync".into(),
                value: Some("none".into())
            }
        );
        assert_eq!(parse_cli("core.bare").unwrap().value, None);
        assert_eq!(parse_cli("a.b=c=d").unwrap().value.as_deref(), Some("c=d"));
        assert!(parse_cli("nosection=1").is_err());
        assert!(parse_cli("=1").is_err());
    }

    #[test]
    fn parameters_both_styles_and_quotes() {
        let got =
            parse_parameters(r"'core.fsync'='none' 'user.name=it'\''s me' 'core.bare'").unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].value.as_deref(), Some("none"));
        assert_eq!(got[1].key, "user.name");
        assert_eq!(got[1].value.as_deref(), Some("it's me"));
        assert_eq!(got[2].value, None);
        assert!(parse_parameters("'unterminated").is_err());
        assert!(parse_parameters("").unwrap().is_empty());
    }
}
