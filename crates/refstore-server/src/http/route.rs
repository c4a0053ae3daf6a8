//! Which repository and which service a smart-HTTP request is for.
//!
//! Smart HTTP has three endpoints below a repository's URL:
//! `GET .../info/refs?service=git-upload-pack|git-receive-pack` (the
//! advertisement) and `POST .../git-upload-pack`, `POST .../git-receive-pack`
//! (one round of the protocol). Everything else, including git's "dumb"
//! protocol files, is not served.

pub use crate::service::Service;

/// What a request asks of the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// The ref advertisement (`GET info/refs`).
    Advertisement,
    /// One request/response round (`POST git-<service>`).
    Rpc,
}

/// A request understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The repository's path below the served root, percent-decoded and
    /// without leading or trailing slashes.
    pub repo: String,
    /// The service.
    pub service: Service,
    /// The endpoint.
    pub endpoint: Endpoint,
}

/// Why a request cannot be routed, as an HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 400: the URL cannot be decoded.
    BadRequest,
    /// 403: a service that does not exist was asked for.
    Forbidden,
    /// 404: not a smart-HTTP endpoint.
    NotFound,
    /// 405: the right endpoint with the wrong method.
    MethodNotAllowed,
}

impl Refusal {
    /// The HTTP status code.
    pub fn status(self) -> u16 {
        match self {
            Refusal::BadRequest => 400,
            Refusal::Forbidden => 403,
            Refusal::NotFound => 404,
            Refusal::MethodNotAllowed => 405,
        }
    }
}

/// Routes a request line's method and URL.
pub fn route(method: &str, url: &str) -> Result<Route, Refusal> {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let path = percent_decode(path).ok_or(Refusal::BadRequest)?;
    let (repo, endpoint, service) = if let Some(repo) = path.strip_suffix("/info/refs") {
        let service = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("service="))
            .ok_or(Refusal::NotFound)?;
        let service = percent_decode(service).ok_or(Refusal::BadRequest)?;
        let service = Service::from_name(&service).ok_or(Refusal::Forbidden)?;
        if method != "GET" && method != "HEAD" {
            return Err(Refusal::MethodNotAllowed);
        }
        (repo, Endpoint::Advertisement, service)
    } else {
        let (repo, last) = path.rsplit_once('/').ok_or(Refusal::NotFound)?;
        let service = Service::from_name(last).ok_or(Refusal::NotFound)?;
        if method != "POST" {
            return Err(Refusal::MethodNotAllowed);
        }
        (repo, Endpoint::Rpc, service)
    };
    let repo = repo.trim_matches('/');
    if repo.is_empty() {
        return Err(Refusal::NotFound);
    }
    Ok(Route {
        repo: repo.to_owned(),
        service,
        endpoint,
    })
}

/// Decodes `%xx` escapes; `None` for a bad escape, a NUL or invalid UTF-8.
pub(crate) fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    if out.contains(&0) {
        return None;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(repo: &str, service: Service, endpoint: Endpoint) -> Result<Route, Refusal> {
        Ok(Route {
            repo: repo.to_owned(),
            service,
            endpoint,
        })
    }

    #[test]
    fn smart_http_endpoints() {
        use Endpoint::*;
        use Service::*;
        assert_eq!(
            route("GET", "/team/r.git/info/refs?service=git-upload-pack"),
            ok("team/r.git", UploadPack, Advertisement)
        );
        assert_eq!(
            route("GET", "/r/info/refs?foo=1&service=git-receive-pack"),
            ok("r", ReceivePack, Advertisement)
        );
        assert_eq!(
            route("POST", "/r.git/git-upload-pack"),
            ok("r.git", UploadPack, Rpc)
        );
        assert_eq!(
            route("POST", "/my%20repo/git-receive-pack"),
            ok("my repo", ReceivePack, Rpc)
        );
    }

    #[test]
    fn everything_else_is_refused() {
        assert_eq!(route("GET", "/r/info/refs"), Err(Refusal::NotFound));
        assert_eq!(route("GET", "/r/HEAD"), Err(Refusal::NotFound));
        assert_eq!(
            route("GET", "/r/objects/info/packs"),
            Err(Refusal::NotFound)
        );
        assert_eq!(
            route("GET", "/r/info/refs?service=git-shell"),
            Err(Refusal::Forbidden)
        );
        assert_eq!(
            route("GET", "/r/git-upload-pack"),
            Err(Refusal::MethodNotAllowed)
        );
        assert_eq!(
            route("POST", "/r/info/refs?service=git-upload-pack"),
            Err(Refusal::MethodNotAllowed)
        );
        assert_eq!(route("POST", "/git-upload-pack"), Err(Refusal::NotFound));
        assert_eq!(
            route("POST", "/a%00b/git-upload-pack"),
            Err(Refusal::BadRequest)
        );
        assert_eq!(
            route("POST", "/a%zz/git-upload-pack"),
            Err(Refusal::BadRequest)
        );
    }
}
