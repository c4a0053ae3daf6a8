//! What a client may make a service take in, the same for every transport.
//!
//! The limits are configuration of the served repository, so that
//! `refstore upload-pack`/`receive-pack` over stdio (run by sshd or by
//! git for `file://`) apply them as `refstore serve` does over HTTP, HTTPS
//! and SSH; the server gives its command-line limits to every repository
//! it opens as overrides ([`Limits::overrides`]), over what the
//! repository says. The services enforce them on their input, whatever
//! carries it; HTTP also refuses an announced `Content-Length` beyond
//! them before reading (413).
//!
//! | key | default | bounds |
//! |---|---|---|
//! | `refstore.maxFetchRequest` | 10 MiB | what a fetch's client sends (wants, haves) |
//! | `refstore.maxPushRequest` | 8 GiB | what a push's client sends (commands, options, pack) |
//! | `refstore.maxPushInflated` | 4 GiB | what a push's objects inflate to (0: no bound) |
//! | `refstore.maxPushOptions` | 100 | how many push options one push may send |
//! | `refstore.maxPushOptionsSize` | 64 KiB | their bytes together |
//! | `refstore.bigFileThreshold` | unset | objects a service holds whole (see below) |
//!
//! `refstore.bigFileThreshold` lowers `core.bigFileThreshold` for the
//! services alone, with its meaning: a pushed object of that size or more
//! is streamed (hashed, checked and stored in pieces, never held whole)
//! and deltas of such objects are refused. Unset, the services follow
//! `core.bigFileThreshold` (512 MiB by default) as git does; `refstore
//! serve` sets it (16 MiB by default) for every repository, because there
//! one process runs every request and an object held whole costs its size
//! (and more) for each concurrent push.
//!
//! Time limits are the transport's: `refstore serve --timeout` for HTTP
//! and SSH alike; over stdio, the program that runs the service (sshd)
//! decides how long a client may stay.

use refstore_fs::config::{Config, Override};
use std::io::{self, Read};

/// The key of the bound on a fetch request.
pub const MAX_FETCH_REQUEST_KEY: &str = "refstore.maxFetchRequest";
/// The key of the bound on a push request.
pub const MAX_PUSH_REQUEST_KEY: &str = "refstore.maxPushRequest";
/// The key of the bound on what a push inflates to.
pub const MAX_PUSH_INFLATED_KEY: &str = "refstore.maxPushInflated";
/// The key of the bound on the number of push options.
pub const MAX_PUSH_OPTIONS_KEY: &str = "refstore.maxPushOptions";
/// The key of the bound on the push options' bytes.
pub const MAX_PUSH_OPTIONS_SIZE_KEY: &str = "refstore.maxPushOptionsSize";
/// The key of the services' own, lower, `core.bigFileThreshold`.
pub const BIG_FILE_THRESHOLD_KEY: &str = "refstore.bigFileThreshold";
/// What `refstore serve` sets [`BIG_FILE_THRESHOLD_KEY`] to by default.
pub const SERVE_BIG_FILE_THRESHOLD: u64 = 16 << 20;

/// The limits of one service call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes a fetch's client sends. As git http-backend's
    /// `GIT_HTTP_MAX_REQUEST_BUFFER`: room for some 200k "have" lines.
    pub max_fetch_request: u64,
    /// The most bytes a push's client sends.
    pub max_push_request: u64,
    /// The most a push's objects may inflate to (`None`: no bound).
    pub max_push_inflated: Option<u64>,
    /// The most push options one push may send.
    pub max_push_options: u64,
    /// The most bytes the push options of one push may hold together.
    pub max_push_options_size: u64,
    /// Objects of this size or more are streamed, when lower than
    /// `core.bigFileThreshold` (`None`: that alone decides).
    pub big_file_threshold: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_fetch_request: 10 << 20,
            max_push_request: 8 << 30,
            max_push_inflated: Some(4 << 30),
            max_push_options: 100,
            max_push_options_size: 64 << 10,
            big_file_threshold: None,
        }
    }
}

impl Limits {
    /// The limits `config` sets, the defaults for what it does not.
    pub fn from_config(config: &Config) -> Result<Limits, String> {
        let defaults = Limits::default();
        let size = |key: &str, default: u64| -> Result<u64, String> {
            match config.int(key).map_err(|e| e.to_string())? {
                None => Ok(default),
                Some(value) => u64::try_from(value)
                    .map_err(|_| format!("bad numeric config value '{value}' for '{key}'")),
            }
        };
        let inflated = size(
            MAX_PUSH_INFLATED_KEY,
            defaults.max_push_inflated.unwrap_or(0),
        )?;
        Ok(Limits {
            max_fetch_request: size(MAX_FETCH_REQUEST_KEY, defaults.max_fetch_request)?,
            max_push_request: size(MAX_PUSH_REQUEST_KEY, defaults.max_push_request)?,
            max_push_inflated: (inflated > 0).then_some(inflated),
            max_push_options: size(MAX_PUSH_OPTIONS_KEY, defaults.max_push_options)?,
            max_push_options_size: size(MAX_PUSH_OPTIONS_SIZE_KEY, defaults.max_push_options_size)?,
            // Not positive: unset, as git reads core.bigFileThreshold.
            big_file_threshold: Some(size(BIG_FILE_THRESHOLD_KEY, 0)?).filter(|&v| v > 0),
        })
    }

    /// The configuration that sets these limits, for a server to give
    /// every repository it opens.
    pub fn overrides(&self) -> Vec<Override> {
        let set = |key: &str, value: u64| Override {
            key: key.to_owned(),
            value: Some(value.to_string()),
        };
        let mut overrides = vec![
            set(MAX_FETCH_REQUEST_KEY, self.max_fetch_request),
            set(MAX_PUSH_REQUEST_KEY, self.max_push_request),
            set(MAX_PUSH_INFLATED_KEY, self.max_push_inflated.unwrap_or(0)),
            set(MAX_PUSH_OPTIONS_KEY, self.max_push_options),
            set(MAX_PUSH_OPTIONS_SIZE_KEY, self.max_push_options_size),
        ];
        overrides.extend(
            self.big_file_threshold
                .map(|value| set(BIG_FILE_THRESHOLD_KEY, value)),
        );
        overrides
    }
}

/// A request went past a limit: the HTTP transport answers 413 for it,
/// the others end the service with this message.
#[derive(Debug, thiserror::Error)]
#[error("the request is larger than this server accepts ({0} bytes)")]
pub struct TooLarge(pub u64);

/// A reader that fails with [`TooLarge`] (as an `InvalidData` I/O error)
/// once more than `limit` bytes come from it.
pub struct Limited<R> {
    inner: R,
    remaining: u64,
    limit: u64,
    exceeded: bool,
}

impl<R> Limited<R> {
    /// At most `limit` bytes of `inner`.
    pub fn new(inner: R, limit: u64) -> Self {
        Limited {
            inner,
            remaining: limit,
            limit,
            exceeded: false,
        }
    }

    /// The limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// True once a read went past the limit, whatever the reader above
    /// made of the error.
    pub fn exceeded(&self) -> bool {
        self.exceeded
    }
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 {
            // One more byte tells a request of exactly `limit` bytes from
            // a longer one.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => {
                    self.exceeded = true;
                    Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        TooLarge(self.limit),
                    ))
                }
            };
        }
        let max = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..max])?;
        self.remaining -= n as u64;
        Ok(n)
    }
}

/// True if `e` is a [`TooLarge`] from a [`Limited`] reader.
pub fn is_too_large(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<TooLarge>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_gives_its_limit_and_fails_beyond() {
        let mut exact = Vec::new();
        Limited::new(&b"abcd"[..], 4)
            .read_to_end(&mut exact)
            .unwrap();
        assert_eq!(exact, b"abcd");
        let e = Limited::new(&b"abcde"[..], 4)
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert!(is_too_large(&e), "{e}");
        assert!(e.to_string().contains("(4 bytes)"), "{e}");
    }

    #[test]
    fn configuration_sets_limits_and_overrides_give_them_back() {
        let limits = Limits {
            max_fetch_request: 1,
            max_push_request: 2,
            max_push_inflated: None,
            max_push_options: 3,
            max_push_options_size: 4,
            big_file_threshold: Some(5),
        };
        let config = Config::load(None, &limits.overrides()).unwrap();
        assert_eq!(Limits::from_config(&config).unwrap(), limits);
        let config = Config::load(None, &[]).unwrap();
        assert_eq!(Limits::from_config(&config).unwrap(), Limits::default());
        let bad = Override {
            key: MAX_PUSH_OPTIONS_KEY.to_owned(),
            value: Some("-1".to_owned()),
        };
        let config = Config::load(None, &[bad]).unwrap();
        assert!(Limits::from_config(&config).is_err());
    }
}
