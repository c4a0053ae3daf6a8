//! The internal replication endpoint of a cluster's nodes, served only
//! when replication is configured and only to requests that carry the
//! shared secret (see [`refstore_replica::secret`]):
//!
//! - `GET /_refstore/replicate/<repo>/packs`: the repository's packs,
//!   one `pack-<hex> <size>` line each;
//! - `GET /_refstore/replicate/<repo>/pack/pack-<hex>.pack` (or `.idx`):
//!   one file of a pack;
//! - `POST /_refstore/replicate/<repo>/pack`: a complete pack, verified
//!   and indexed durably before the answer (200 with its name; a pack
//!   already there is 200 too; one that does not verify is 400 with
//!   nothing stored); then background maintenance is asked for, as after
//!   a push.
//!
//! The repository is found and confined below the served root as for the
//! git endpoints ([`crate::confine::repository`]), and named alike. These requests run on the
//! blocking pool without taking a worker's turn: a push waiting for its
//! peers holds a turn, and two nodes replicating to each other under
//! load must not wait for each other's turns.

use super::body::{self, Encoding, Failure};
use super::jobs::blocking;
use super::pace::PacedBody;
use super::refusal::{refuse, refuse_body};
use super::respond::{Answer, Reply};
use super::state::State;
use crate::confine::{self, Served};
use crate::metrics::Rejection;
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use refstore_protocol::repository::{OpenError, Repository};
use refstore_replica::packs::{self, PackFile};
use refstore_replica::secret::{self, Verdict};
use std::sync::Arc;

/// What a replication request asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ask {
    List,
    Download(String, PackFile),
    Upload,
}

/// Answers a request whose path starts with the endpoint's prefix.
pub(super) async fn handle(
    state: &Arc<State>,
    request: Request<Incoming>,
    answer: &mut Answer,
    target: &str,
) -> Response<Reply> {
    let Some(replica) = &state.options.replication else {
        return answer.text(404, "not found", &[]);
    };
    if let Some(line) = &mut answer.line {
        line.service = "replicate";
    }
    let header = request
        .headers()
        .get(secret::HEADER)
        .and_then(|v| v.to_str().ok());
    match secret::check(&replica.peers().secret, header) {
        Verdict::Authorized => {}
        Verdict::Missing => {
            return refuse(
                state,
                answer,
                Rejection::Unauthorized,
                401,
                "authentication required",
                &[("WWW-Authenticate", "Bearer realm=\"refstore replication\"")],
            )
        }
        Verdict::Wrong => {
            return refuse(state, answer, Rejection::Forbidden, 403, "forbidden", &[])
        }
    }
    let Some((repo, ask)) = parse(request.method(), target) else {
        return answer.text(404, "not found", &[]);
    };
    let located = {
        let (state, repo) = (state.clone(), repo.clone());
        blocking(move || {
            let find = || confine::repository(state.vfs.as_ref(), &state.options.root, &repo).ok();
            // A repository created in the catalog a moment ago may not be
            // on this node's disk yet when a peer sends it a push's pack.
            find().or_else(|| match &state.options.catalog {
                Some(catalog) if catalog.materialize(&repo) => find(),
                _ => None,
            })
        })
        .await
        .flatten()
    };
    let Some(served) = located else {
        return answer.text(404, "repository not found", &[]);
    };
    let pack = match ask {
        Ask::Upload => {
            let received = answer
                .line
                .as_ref()
                .map_or_else(Default::default, |l| l.received.clone());
            let mut input = PacedBody::new(request.into_body(), state.options.timeout, received);
            let limit = state.options.limits.max_push_request;
            match body::collect(&mut input, Encoding::Identity, limit).await {
                Ok(pack) => Some(pack),
                Err(e) => return refuse_body(state, answer, Failure::of(&e), &e.to_string()),
            }
        }
        _ => None,
    };
    let job_state = state.clone();
    let name = repo.clone();
    let outcome = blocking(move || serve(&job_state, served, &ask, pack.as_deref())).await;
    match outcome {
        Some(Ok(body)) => answer.whole("application/octet-stream", body),
        Some(Err((status, message))) => {
            if status >= 500 {
                tracing::error!(repo = %name, "replication request failed: {message}");
            } else {
                tracing::warn!(repo = %name, "replication request refused: {message}");
            }
            answer.text(status, &message, &[])
        }
        None => answer.text(500, "the replication request failed", &[]),
    }
}

/// Does what `ask` asks of the repository `served`: the answer's body,
/// or its status and message.
fn serve(
    state: &State,
    served: Served,
    ask: &Ask,
    pack: Option<&[u8]>,
) -> Result<Vec<u8>, (u16, String)> {
    let name = served.name.clone();
    let repo = refstore_repo::Repository::open_location(
        state.vfs.clone(),
        served.location,
        &state.options.repository_overrides(),
    )
    .and_then(Repository::serve)
    .map_err(|e| match e {
        OpenError::NotARepository(_) => (404, "repository not found".to_owned()),
        e => (500, e.to_string()),
    })?;
    match ask {
        Ask::List => {
            let mut out = String::new();
            for (name, size) in packs::list(&repo).map_err(|e| (500, e))? {
                out.push_str(&format!("{name} {size}\n"));
            }
            Ok(out.into_bytes())
        }
        Ask::Download(name, file) => packs::read(&repo, name, *file)
            .map_err(|e| (500, e))?
            .ok_or_else(|| (404, "no such pack".to_owned())),
        Ask::Upload => {
            let stored = packs::index(&repo, pack.unwrap_or_default())
                .map_err(|e| (400, format!("pack refused: {e}")))?;
            // Packs copied here add up as the node's own pushes do, so
            // they are rolled up as those are, with the cluster's refs.
            state.maintenance.after_push(&repo, &name);
            Ok(format!("{stored}\n").into_bytes())
        }
    }
}

/// The repository and the request of a path below the prefix; `None` for
/// anything else.
pub(crate) fn parse(method: &Method, target: &str) -> Option<(String, Ask)> {
    let path = target.split_once('?').map_or(target, |(path, _)| path);
    let path = path.strip_prefix(refstore_replica::ENDPOINT_PREFIX)?;
    let path = super::route::percent_decode(path)?;
    let (repo, ask) = if let Some(repo) = path.strip_suffix("/packs") {
        (repo, (method == Method::GET).then_some(Ask::List)?)
    } else if let Some(repo) = path.strip_suffix("/pack") {
        (repo, (method == Method::POST).then_some(Ask::Upload)?)
    } else {
        let (repo, file) = path.rsplit_once("/pack/")?;
        let ask = if let Some(name) = file.strip_suffix(".pack") {
            Ask::Download(name.to_owned(), PackFile::Pack)
        } else {
            let name = file.strip_suffix(".idx")?;
            Ask::Download(name.to_owned(), PackFile::Index)
        };
        (repo, (method == Method::GET).then_some(ask)?)
    };
    let repo = repo.trim_matches('/');
    (!repo.is_empty()).then(|| (repo.to_owned(), ask))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_methods() {
        let p = "/_refstore/replicate/";
        assert_eq!(
            parse(&Method::GET, &format!("{p}team/r.git/packs")),
            Some(("team/r.git".into(), Ask::List))
        );
        assert_eq!(
            parse(&Method::POST, &format!("{p}my%20r/pack")),
            Some(("my r".into(), Ask::Upload))
        );
        assert_eq!(
            parse(&Method::GET, &format!("{p}r/pack/pack-ab.idx")),
            Some(("r".into(), Ask::Download("pack-ab".into(), PackFile::Index)))
        );
        assert_eq!(parse(&Method::POST, &format!("{p}r/packs")), None);
        assert_eq!(parse(&Method::GET, &format!("{p}r/pack")), None);
        assert_eq!(parse(&Method::GET, &format!("{p}r/pack/x.keep")), None);
        assert_eq!(parse(&Method::GET, &format!("{p}/packs")), None);
        assert_eq!(parse(&Method::GET, "/r/packs"), None);
        assert_eq!(parse(&Method::GET, &format!("{p}a%00/packs")), None);
    }
}
