//! A push over HTTP: the pack streams into the repository as the client
//! sends it, through a bounded channel to receive-pack on the blocking
//! pool; the report is short and sent whole.

use super::body::{self, Encoding, Watched};
use super::bridge::{ChannelReader, DEPTH};
use super::jobs::run;
use super::pace::PacedBody;
use super::refusal::refuse_body;
use super::respond::{Answer, Reply};
use super::route::Route;
use super::services;
use super::state::State;
use crate::confine::Served;
use hyper::Response;
use std::cell::Cell;
use std::sync::Arc;
use tokio::sync::mpsc;

/// A push: the pack streams into the repository as it arrives; the
/// report is short and sent whole.
pub(super) async fn push(
    state: &Arc<State>,
    answer: &mut Answer,
    route: &Route,
    path: Served,
    mut input: PacedBody,
    encoding: Encoding,
    limit: u64,
) -> Response<Reply> {
    let (tx, rx) = mpsc::channel(DEPTH);
    let service_state = state.clone();
    let job = run(state, answer, route, path, move |repo| {
        let failure = Cell::new(None);
        let mut input = Watched::new(
            body::decoded(ChannelReader::new(rx), encoding, limit),
            &failure,
        );
        let mut output = Vec::new();
        let result = services::receive_pack(&repo, &mut input, &mut output);
        // A refused push stored nothing there is to maintain.
        if result.as_ref().is_ok_and(|&updated| updated > 0) && failure.get().is_none() {
            service_state.maintenance.after_push(&repo.location.git_dir);
        }
        (result, output, failure.get())
    })
    .await;
    let mut job = match job {
        Ok(job) => job,
        Err(refusal) => {
            answer.close = true;
            return refusal;
        }
    };
    let mut whole_body_read = false;
    let outcome = {
        let pump = async {
            loop {
                match input.next().await {
                    Ok(Some(piece)) => {
                        if tx.send(Ok(piece)).await.is_err() {
                            return;
                        }
                    }
                    Ok(None) => {
                        whole_body_read = true;
                        return;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                }
            }
        };
        tokio::pin!(pump);
        tokio::select! {
            outcome = &mut job => outcome,
            () = &mut pump => (&mut job).await,
        }
    };
    drop(tx);
    answer.close |= !whole_body_read;
    let Ok(Some((result, output, failure))) = outcome else {
        return answer.text(500, "the push failed", &[]);
    };
    // A body cut off (too large, too slow) is answered with its HTTP
    // status even where the service reported it in its own words, so
    // clients and proxies see what happened.
    if let Some(failure) = failure {
        let message = match &result {
            Err(message) => message.clone(),
            Ok(_) => String::from_utf8_lossy(&output).into_owned(),
        };
        tracing::warn!(repo = %route.repo, "push failed: {message}");
        return refuse_body(state, answer, failure, &message);
    }
    if let Err(message) = &result {
        tracing::warn!(repo = %route.repo, "push failed: {message}");
        if output.is_empty() {
            return answer.text(500, message, &[]);
        }
    }
    let result_type = format!("application/x-{}-result", route.service.name());
    answer.whole(&result_type, output)
}
