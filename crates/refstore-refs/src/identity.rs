//! Who and when, for reflog entries: git's committer identity, from the
//! environment and the configuration's `user.*` keys.

mod clock;

use refstore_fs::config::Config;

/// A committer identity with a timestamp, as written into reflogs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The committer's name.
    pub name: String,
    /// The committer's e-mail address.
    pub email: String,
    /// Seconds since the Unix epoch.
    pub seconds: i64,
    /// Offset from UTC in seconds (east positive).
    pub offset_seconds: i32,
}

impl Identity {
    /// The identity as a reflog line has it: `Name <email> 1700000000 +0130`.
    pub fn signature(&self) -> String {
        let sign = if self.offset_seconds < 0 { '-' } else { '+' };
        let minutes = self.offset_seconds.unsigned_abs() / 60;
        format!(
            "{} <{}> {} {sign}{:02}{:02}",
            self.name,
            self.email,
            self.seconds,
            minutes / 60,
            minutes % 60
        )
    }
}

/// Why no identity could be made (a `GIT_COMMITTER_DATE` git would refuse),
/// worded as git words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IdentityError(String);

/// The committer identity for reflog entries of a repository with
/// configuration `config`, resolved as git resolves it.
pub fn committer(config: &Config) -> Result<Identity, IdentityError> {
    resolve(
        config.string("user.name"),
        config.string("user.email"),
        &|k| std::env::var(k).ok(),
    )
    .map_err(IdentityError)
}

/// Resolves the committer identity like git: `GIT_COMMITTER_NAME`,
/// `GIT_COMMITTER_EMAIL` and `GIT_COMMITTER_DATE` first, then `user.name` /
/// `user.email` (and `EMAIL`), then the login name and `name@hostname`.
fn resolve(
    user_name: Option<String>,
    user_email: Option<String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Identity, String> {
    let login = env("USER")
        .or_else(|| env("LOGNAME"))
        .unwrap_or_else(|| "unknown".to_owned());
    let name = env("GIT_COMMITTER_NAME")
        .or(user_name)
        .unwrap_or_else(|| login.clone());
    let email = env("GIT_COMMITTER_EMAIL")
        .or(user_email)
        .or_else(|| env("EMAIL"))
        .unwrap_or_else(|| {
            let host = rustix::system::uname()
                .nodename()
                .to_string_lossy()
                .into_owned();
            format!("{login}@{host}")
        });
    let (seconds, offset_seconds) = match env("GIT_COMMITTER_DATE") {
        Some(date) => {
            let time =
                gix_date::parse(&date, None).map_err(|_| format!("invalid date format: {date}"))?;
            (time.seconds, time.offset)
        }
        None => clock::now_local(),
    };
    Ok(Identity {
        name,
        email,
        seconds,
        offset_seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn environment_wins_over_config() {
        let env = env_of(&[
            ("GIT_COMMITTER_NAME", "C O Mitter"),
            ("GIT_COMMITTER_DATE", "1700000000 +0130"),
        ]);
        let id = resolve(Some("user".into()), Some("u@x".into()), &env).unwrap();
        assert_eq!(id.signature(), "C O Mitter <u@x> 1700000000 +0130");
    }

    #[test]
    fn date_formats_and_negative_offsets() {
        for (date, expected) in [
            ("@1700000000 -0700", "1700000000 -0700"),
            ("2023-11-14T22:13:20Z", "1700000000 +0000"),
            ("Tue, 14 Nov 2023 22:13:20 +0000", "1700000000 +0000"),
        ] {
            let pairs: &'static [(&str, &str)] =
                Box::leak(vec![("GIT_COMMITTER_DATE", date)].into_boxed_slice());
            let id = resolve(Some("n".into()), Some("e".into()), &env_of(pairs)).unwrap();
            assert!(
                id.signature().ends_with(expected),
                "{date}: {}",
                id.signature()
            );
        }
        let bad = resolve(
            None,
            None,
            &env_of(&[("GIT_COMMITTER_DATE", "yesterday-ish")]),
        );
        assert!(bad.is_err());
    }

    #[test]
    fn falls_back_to_login_and_host() {
        let id = resolve(None, None, &env_of(&[("USER", "alice")])).unwrap();
        assert_eq!(id.name, "alice");
        assert!(id.email.starts_with("alice@"), "{}", id.email);
    }
}
