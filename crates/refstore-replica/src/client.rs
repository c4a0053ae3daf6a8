//! Requests to peers' replication endpoints: the list of a repository's
//! packs, one file of a pack, and a pack sent to be stored.
//!
//! Paths: `GET <node>/_refstore/replicate/<repo>/packs` (lines of
//! `pack-<hex> <size>`), `GET .../pack/pack-<hex>.pack` or `.idx`, and
//! `POST .../pack` with a complete pack as the body, answered with its
//! name once the peer holds it durably.

use crate::packs::ENDPOINT_PREFIX;
use crate::secret;
use std::time::Duration;

/// The largest answer read from a peer: a pack file is held whole, as
/// when a push receives it.
const MAX_ANSWER: u64 = 8 << 30;

/// A client of peers' replication endpoints, every request bounded by
/// the configured timeout.
#[derive(Clone)]
pub(crate) struct Client {
    agent: ureq::Agent,
    authorization: String,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

impl Client {
    pub(crate) fn new(secret: &[u8], timeout: Duration) -> Client {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        Client {
            agent,
            authorization: secret::header_value(secret),
        }
    }

    /// The packs of `repo` on the peer at `base` and their sizes.
    pub(crate) fn list(&self, base: &str, repo: &str) -> Result<Vec<(String, u64)>, String> {
        let text = self.get(base, repo, "packs")?;
        let text = String::from_utf8(text).map_err(|_| "the pack list is not text")?;
        text.lines()
            .map(|line| {
                let (name, size) = line
                    .split_once(' ')
                    .ok_or_else(|| format!("bad pack list line '{line}'"))?;
                let size = size
                    .parse()
                    .map_err(|_| format!("bad pack list line '{line}'"))?;
                Ok((name.to_owned(), size))
            })
            .collect()
    }

    /// The file `pack-<hex>.pack` or `.idx` of `repo` on the peer.
    pub(crate) fn download(&self, base: &str, repo: &str, file: &str) -> Result<Vec<u8>, String> {
        self.get(base, repo, &format!("pack/{file}"))
    }

    /// Sends a pack of `repo` to the peer; the name it stored it under.
    pub(crate) fn send(&self, base: &str, repo: &str, pack: &[u8]) -> Result<String, String> {
        let answer = self
            .agent
            .post(url(base, repo, "pack"))
            .header(secret::HEADER, &self.authorization)
            .header("Content-Type", "application/x-git-packfile")
            .send(pack)
            .map_err(|e| e.to_string())?;
        let body = read(answer)?;
        Ok(String::from_utf8_lossy(&body).trim().to_owned())
    }

    fn get(&self, base: &str, repo: &str, tail: &str) -> Result<Vec<u8>, String> {
        let answer = self
            .agent
            .get(url(base, repo, tail))
            .header(secret::HEADER, &self.authorization)
            .call()
            .map_err(|e| e.to_string())?;
        read(answer)
    }
}

/// The body of a successful answer; an error with the peer's message
/// otherwise.
fn read(mut answer: ureq::http::Response<ureq::Body>) -> Result<Vec<u8>, String> {
    let status = answer.status().as_u16();
    let body = answer
        .body_mut()
        .with_config()
        .limit(MAX_ANSWER)
        .read_to_vec()
        .map_err(|e| e.to_string())?;
    if status == 200 {
        Ok(body)
    } else {
        Err(format!(
            "HTTP {status}: {}",
            String::from_utf8_lossy(&body).trim()
        ))
    }
}

/// The URL of an endpoint of `repo` below the node at `base`, the
/// repository's path percent-encoded where it must be.
fn url(base: &str, repo: &str, tail: &str) -> String {
    let mut url = base.trim_end_matches('/').to_owned();
    url.push_str(ENDPOINT_PREFIX);
    for byte in repo.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            url.push(byte as char);
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url.push('/');
    url.push_str(tail);
    url
}

#[cfg(test)]
mod tests {
    #[test]
    fn repository_paths_are_encoded() {
        assert_eq!(
            super::url("http://h:1/", "team/my repo.git", "packs"),
            "http://h:1/_refstore/replicate/team/my%20repo.git/packs"
        );
    }
}
