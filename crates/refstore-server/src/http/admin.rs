//! The admin endpoint: a host's web application creates, deletes, renames
//! and lists the repositories of a server with a catalog
//! ([`crate::catalog`], a cluster's records) over HTTP, in JSON:
//!
//! - `GET /_refstore/admin/repositories`: `{"repositories": [entry...]}`,
//!   the repositories the user administers;
//! - `POST /_refstore/admin/repositories` with `{"name": "team/r.git",
//!   "object_format": "sha1", "ref_format": "files", "initial_branch":
//!   "main"}` (all but `name` optional): 201 and the entry;
//! - `DELETE /_refstore/admin/repositories/<name>`: 200;
//! - `POST /_refstore/admin/repositories/<name>/rename` with `{"to":
//!   "<new name>"}`: 200 and the entry under its new name.
//!
//! An entry is `{"name", "object_format", "ref_format", "head"}`; a
//! failure is `{"error": "<message>"}` with 400 (bad name or body), 404,
//! 409 (name taken, or changed meanwhile) or 503 (etcd unreachable).
//!
//! Every request is authenticated with the server's `--credentials`
//! (HTTP Basic, throttled as every login is) and allowed by an `admin`
//! rule of its `--access` file for each repository it names, both names
//! of a rename ([`crate::access`]): 401 without valid credentials, 403
//! without such a rule. Without a catalog the endpoint does not exist
//! (404).

use super::body::{self, Encoding, Failure as BodyFailure};
use super::jobs::blocking;
use super::pace::PacedBody;
use super::refusal::{refuse, refuse_body};
use super::respond::{Answer, Reply};
use super::route::percent_decode;
use super::state::State;
use crate::access::AccessRules;
use crate::catalog::{Catalog, CatalogError, Entry, NewEntry};
use crate::metrics::Rejection;
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use std::sync::Arc;

/// Where the endpoint's paths start.
pub(super) const ENDPOINT_PREFIX: &str = "/_refstore/admin/";

/// The largest request body accepted.
const MAX_BODY: u64 = 64 * 1024;

/// What a request asks.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ask {
    List,
    Create,
    Delete(String),
    Rename(String),
}

#[derive(serde::Serialize)]
struct EntryJson<'a> {
    name: &'a str,
    object_format: &'a str,
    ref_format: &'a str,
    head: &'a str,
}

impl<'a> From<&'a Entry> for EntryJson<'a> {
    fn from(e: &'a Entry) -> Self {
        EntryJson {
            name: &e.name,
            object_format: &e.object_format,
            ref_format: &e.ref_format,
            head: &e.head,
        }
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateJson {
    name: String,
    object_format: Option<String>,
    ref_format: Option<String>,
    initial_branch: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RenameJson {
    to: String,
}

/// Answers a request whose path starts with [`ENDPOINT_PREFIX`].
pub(super) async fn handle(
    state: &Arc<State>,
    request: Request<Incoming>,
    answer: &mut Answer,
    target: &str,
) -> Response<Reply> {
    let Some(catalog) = state.options.catalog.clone() else {
        return answer.text(404, "not found", &[]);
    };
    if let Some(line) = &mut answer.line {
        line.service = "admin";
    }
    let Some(ask) = parse(request.method(), target) else {
        return error(answer, 404, "not found");
    };
    let user = match authenticate(state, &request, answer).await {
        Ok(user) => user,
        Err(refusal) => return refusal,
    };
    let admin = Admin {
        state,
        catalog,
        rules: state.options.access.as_ref().map(|rules| rules.get()),
        user,
    };
    let body = match ask {
        Ask::Create | Ask::Rename(_) => match read_body(state, request, answer).await {
            Ok(body) => body,
            Err(refusal) => return refusal,
        },
        _ => Vec::new(),
    };
    match ask {
        Ask::List => admin.list(answer).await,
        Ask::Create => admin.create(answer, &body).await,
        Ask::Delete(name) => admin.delete(answer, name).await,
        Ask::Rename(from) => admin.rename(answer, from, &body).await,
    }
}

/// The user the request's credentials name; the response that refuses
/// it without valid ones.
async fn authenticate(
    state: &Arc<State>,
    request: &Request<Incoming>,
    answer: &mut Answer,
) -> Result<String, Response<Reply>> {
    let header = request
        .headers()
        .get("Authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let user = match header {
        Some(header) => super::login::login(state, answer, header).await?,
        None => None,
    };
    let Some(user) = user else {
        return Err(refuse(
            state,
            answer,
            Rejection::Unauthorized,
            401,
            "authentication required",
            &[("WWW-Authenticate", "Basic realm=\"refstore\"")],
        ));
    };
    if let Some(line) = &mut answer.line {
        line.user = Some(user.clone());
    }
    Ok(user)
}

/// The request's JSON body, read whole up to [`MAX_BODY`].
async fn read_body(
    state: &State,
    request: Request<Incoming>,
    answer: &mut Answer,
) -> Result<Vec<u8>, Response<Reply>> {
    let received = answer
        .line
        .as_ref()
        .map_or_else(Default::default, |l| l.received.clone());
    let mut input = PacedBody::new(request.into_body(), state.options.timeout, received);
    body::collect(&mut input, Encoding::Identity, MAX_BODY)
        .await
        .map_err(|e| refuse_body(state, answer, BodyFailure::of(&e), &e.to_string()))
}

/// An authenticated user at the endpoint, and what they may administer.
struct Admin<'a> {
    state: &'a State,
    catalog: Arc<dyn Catalog>,
    rules: Option<Arc<AccessRules>>,
    user: String,
}

impl Admin<'_> {
    /// True if an `admin` rule lets the user administer `name`.
    fn may(&self, name: &str) -> bool {
        let rules = self.rules.as_ref();
        rules.is_some_and(|r| r.allows_admin(&self.user, name))
    }

    /// The 403 for a repository the user may not administer.
    fn forbidden(&self, answer: &mut Answer, name: &str) -> Response<Reply> {
        self.state.options.metrics.rejected(Rejection::Forbidden);
        let user = &self.user;
        error(
            answer,
            403,
            &format!("user '{user}' may not administer '{name}'"),
        )
    }

    /// Lists the repositories the user administers; only a user with an
    /// `admin` rule of some repository may ask.
    async fn list(&self, answer: &mut Answer) -> Response<Reply> {
        if !self
            .rules
            .as_ref()
            .is_some_and(|r| r.grants_admin(&self.user))
        {
            return self.forbidden(answer, "*");
        }
        match run(answer, &self.catalog, |c| c.list()).await {
            Ok(entries) => {
                let entries: Vec<EntryJson> = entries
                    .iter()
                    .filter(|e| self.may(&e.name))
                    .map(EntryJson::from)
                    .collect();
                let body = serde_json::json!({ "repositories": entries });
                answer.json(200, body.to_string().into_bytes())
            }
            Err(refusal) => refusal,
        }
    }

    async fn create(&self, answer: &mut Answer, body: &[u8]) -> Response<Reply> {
        let new: CreateJson = match serde_json::from_slice(body) {
            Ok(new) => new,
            Err(e) => return error(answer, 400, &format!("bad request body: {e}")),
        };
        if !self.may(&new.name) {
            return self.forbidden(answer, &new.name);
        }
        let new = NewEntry {
            name: new.name,
            object_format: new.object_format,
            ref_format: new.ref_format,
            initial_branch: new.initial_branch,
        };
        match run(answer, &self.catalog, move |c| c.create(&new)).await {
            Ok(entry) => entry_answer(answer, 201, &entry),
            Err(refusal) => refusal,
        }
    }

    async fn delete(&self, answer: &mut Answer, name: String) -> Response<Reply> {
        if !self.may(&name) {
            return self.forbidden(answer, &name);
        }
        let deleted = name.clone();
        match run(answer, &self.catalog, move |c| c.delete(&deleted)).await {
            Ok(()) => {
                let body = serde_json::json!({ "deleted": name });
                answer.json(200, body.to_string().into_bytes())
            }
            Err(refusal) => refusal,
        }
    }

    /// Renames `from`; the user must administer both names.
    async fn rename(&self, answer: &mut Answer, from: String, body: &[u8]) -> Response<Reply> {
        let to = match serde_json::from_slice::<RenameJson>(body) {
            Ok(rename) => rename.to,
            Err(e) => return error(answer, 400, &format!("bad request body: {e}")),
        };
        for name in [&from, &to] {
            if !self.may(name) {
                return self.forbidden(answer, name);
            }
        }
        match run(answer, &self.catalog, move |c| c.rename(&from, &to)).await {
            Ok(entry) => entry_answer(answer, 200, &entry),
            Err(refusal) => refusal,
        }
    }
}

/// Runs a catalog operation off the event loop; its failure answered.
async fn run<T: Send + 'static>(
    answer: &mut Answer,
    catalog: &Arc<dyn Catalog>,
    operation: impl FnOnce(&dyn Catalog) -> Result<T, CatalogError> + Send + 'static,
) -> Result<T, Response<Reply>> {
    let catalog = catalog.clone();
    match blocking(move || operation(catalog.as_ref())).await {
        Some(Ok(value)) => Ok(value),
        Some(Err(e)) => Err(error(answer, e.failure.status(), &e.message)),
        None => Err(error(answer, 500, "the operation failed")),
    }
}

fn entry_answer(answer: &mut Answer, status: u16, entry: &Entry) -> Response<Reply> {
    let body = serde_json::to_vec(&EntryJson::from(entry)).unwrap_or_default();
    answer.json(status, body)
}

fn error(answer: &mut Answer, status: u16, message: &str) -> Response<Reply> {
    let body = serde_json::json!({ "error": message });
    answer.json(status, body.to_string().into_bytes())
}

/// The request a method and path below the prefix make; `None` for
/// anything else.
fn parse(method: &Method, target: &str) -> Option<Ask> {
    let path = target.split_once('?').map_or(target, |(path, _)| path);
    let rest = path
        .strip_prefix(ENDPOINT_PREFIX)?
        .strip_prefix("repositories")?;
    if rest.is_empty() || rest == "/" {
        return match *method {
            Method::GET => Some(Ask::List),
            Method::POST => Some(Ask::Create),
            _ => None,
        };
    }
    let name = percent_decode(rest.strip_prefix('/')?)?;
    match (method, name.strip_suffix("/rename")) {
        (&Method::POST, Some(from)) => Some(Ask::Rename(from.to_owned())),
        (&Method::DELETE, None) => Some(Ask::Delete(name)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_methods() {
        let p = "/_refstore/admin/repositories";
        assert_eq!(parse(&Method::GET, p), Some(Ask::List));
        assert_eq!(parse(&Method::POST, &format!("{p}/")), Some(Ask::Create));
        assert_eq!(
            parse(&Method::DELETE, &format!("{p}/team/r.git")),
            Some(Ask::Delete("team/r.git".into()))
        );
        assert_eq!(
            parse(&Method::DELETE, &format!("{p}/team%2Fr.git")),
            Some(Ask::Delete("team/r.git".into()))
        );
        assert_eq!(
            parse(&Method::POST, &format!("{p}/r.git/rename")),
            Some(Ask::Rename("r.git".into()))
        );
        assert_eq!(parse(&Method::PUT, p), None);
        assert_eq!(parse(&Method::GET, &format!("{p}/r.git")), None);
        assert_eq!(parse(&Method::POST, &format!("{p}/r.git")), None);
        assert_eq!(parse(&Method::DELETE, &format!("{p}/a%00.git")), None);
        assert_eq!(parse(&Method::GET, "/_refstore/admin/other"), None);
    }
}
