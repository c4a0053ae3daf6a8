//! A push over HTTP: the pack streams into the repository as the client
//! sends it, through a bounded channel to receive-pack on the blocking
//! pool; the report is short and sent whole.

use super::body::{self, Encoding, Watched};
use super::bridge::{ChannelReader, DEPTH};
use super::jobs::run;
use super::pace::PacedBody;
use super::refusal::{refuse, refuse_body};
use super::respond::{Answer, Reply};
use super::route::Route;
use super::services;
use super::state::State;
use crate::confine::Served;
use crate::metrics::Rejection;
use hyper::Response;
use refstore_protocol::pkt_line;
use refstore_protocol::receive_pack::ReceivePackError;
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
    let name = path.name.clone();
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
            service_state.maintenance.after_push(&repo, &name);
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
            Err(error) => error.to_string(),
            Ok(_) => String::from_utf8_lossy(&output).into_owned(),
        };
        tracing::warn!(repo = %route.repo, "push failed: {message}");
        return refuse_body(state, answer, failure, &message);
    }
    if let Err(error) = &result {
        tracing::warn!(repo = %route.repo, "push failed: {error}");
        if output.is_empty() {
            // git's receive-pack dies without a word on the wire, and
            // git http-backend has sent its 200 by then: the client sees
            // an empty answer. Here the client learns what was wrong.
            return match client_fault(error) {
                Some((status, reason)) => {
                    refuse(state, answer, reason, status, &error.to_string(), &[])
                }
                None => answer.text(500, &error.to_string(), &[]),
            };
        }
    }
    let result_type = format!("application/x-{}-result", route.service.name());
    answer.whole(&result_type, output)
}

/// The status and metric of a push refused for what the client sent (a
/// malformed command list, framing that is not pkt-lines, more than the
/// limits allow); `None` for the server's own failures.
fn client_fault(error: &ReceivePackError) -> Option<(u16, Rejection)> {
    match error {
        ReceivePackError::Request(_) => Some((400, Rejection::BadRequest)),
        ReceivePackError::TooLarge(_) => Some((413, Rejection::BodyTooLarge)),
        ReceivePackError::Packet(error) => match error {
            pkt_line::Error::Io(_)
            | pkt_line::Error::PayloadTooLong(_)
            | pkt_line::Error::Format => None,
            _ => Some((400, Rejection::BadRequest)),
        },
        ReceivePackError::Refs(_) | ReceivePackError::Objects(_) | ReceivePackError::Config(_) => {
            None
        }
    }
}
