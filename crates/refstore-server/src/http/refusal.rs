//! Refusing a request: the answer, and the rejection counted in the
//! metrics.

use super::body::Failure;
use super::respond::{Answer, Reply};
use super::state::State;
use crate::metrics::Rejection;
use hyper::Response;

/// A refusal counted in the metrics.
pub(super) fn refuse(
    state: &State,
    answer: &mut Answer,
    reason: Rejection,
    status: u16,
    message: &str,
    extra: &[(&str, &str)],
) -> Response<Reply> {
    state.options.metrics.rejected(reason);
    answer.text(status, message, extra)
}

/// Answers a request whose body could not be read; the connection closes,
/// since the rest of the body may still be on the wire.
pub(super) fn refuse_body(
    state: &State,
    answer: &mut Answer,
    failure: Failure,
    message: &str,
) -> Response<Reply> {
    answer.close = true;
    let reason = match failure {
        Failure::TooSlow => Rejection::Timeout,
        Failure::TooLarge => Rejection::BodyTooLarge,
        Failure::Malformed => Rejection::BadRequest,
    };
    refuse(state, answer, reason, failure.status(), message, &[])
}
