//! Running the git services, which are synchronous, on tokio's blocking
//! pool: one worker turn each, the repository opened on the thread that
//! uses it.

use super::respond::{Answer, Reply};
use super::route::Route;
use super::state::State;
use crate::confine::Served;
use hyper::Response;
use refstore_protocol::repository::{OpenError, Repository};
use std::sync::Arc;

/// Takes a turn for the client, then opens the repository `served` and
/// runs `service` on it on the blocking pool (a repository stays on the
/// thread that opened it). Waits for the opening only: the job, or the
/// answer to give if the repository cannot be opened.
pub(super) async fn run<T: Send + 'static>(
    state: &Arc<State>,
    answer: &mut Answer,
    route: &Route,
    served: Served,
    service: impl FnOnce(Repository) -> T + Send + 'static,
) -> Result<tokio::task::JoinHandle<Option<T>>, Response<Reply>> {
    let address = answer.line.as_ref().and_then(|l| l.client).map(|a| a.ip());
    let permit = state.permits.acquire(address).await;
    let (opened_tx, opened) = tokio::sync::oneshot::channel();
    let job_state = state.clone();
    let job = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let options = &job_state.options;
        match options.open_repository(job_state.vfs.clone(), &served) {
            Ok(repo) => {
                let _ = opened_tx.send(Ok(()));
                Some(service(repo))
            }
            Err(e) => {
                let _ = opened_tx.send(Err(e));
                None
            }
        }
    });
    match opened.await {
        Ok(Ok(())) => Ok(job),
        Ok(Err(OpenError::NotARepository(_))) => Err(answer.text(404, "repository not found", &[])),
        Ok(Err(e)) => {
            tracing::error!(repo = %route.repo, "cannot open repository: {e}");
            Err(answer.text(500, "cannot open the repository", &[]))
        }
        Err(_) => Err(answer.text(500, "cannot open the repository", &[])),
    }
}

/// Runs blocking work (file system, password hashes) off the event loop;
/// `None` if it panicked.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    tokio::task::spawn_blocking(work).await.ok()
}
