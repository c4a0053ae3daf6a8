//! An HTTP Basic login: its turn under the throttle of failed logins
//! ([`crate::throttle`]), then the password check off the event loop, and
//! the outcome recorded for the next attempts.

use super::jobs::blocking;
use super::refusal::refuse;
use super::respond::{Answer, Reply};
use super::state::State;
use crate::auth::Credentials;
use crate::metrics::Rejection;
use crate::throttle::Turn;
use hyper::Response;
use std::sync::Arc;
use std::time::Instant;

/// The user `header` (an `Authorization` value) authenticates, `None` for
/// a failed login; or the answer to an attempt refused for too many
/// failures (429).
pub(super) async fn login(
    state: &Arc<State>,
    answer: &mut Answer,
    header: String,
) -> Result<Option<String>, Response<Reply>> {
    let address = answer.line.as_ref().and_then(|l| l.client).map(|a| a.ip());
    let name = Credentials::basic_user(&header);
    if let (Some(address), Some(name)) = (address, &name) {
        match state.throttle.turn(address, name, Instant::now()) {
            Turn::Now => {}
            Turn::After(wait) => {
                state.options.metrics.rejected(Rejection::Throttled);
                tokio::time::sleep(wait).await;
            }
            Turn::Refused => {
                let retry = crate::throttle::MAX_WAIT.as_secs().to_string();
                return Err(refuse(
                    state,
                    answer,
                    Rejection::Throttled,
                    429,
                    "too many failed logins; try again later",
                    &[("Retry-After", &retry)],
                ));
            }
        }
    }
    let checking = state.clone();
    // bcrypt takes its time on purpose: not on the event loop.
    let user = blocking(move || {
        checking
            .options
            .credentials
            .check_header(&header)
            .map(str::to_owned)
    })
    .await
    .flatten();
    if let (Some(address), Some(name)) = (address, &name) {
        match &user {
            Some(user) => state.throttle.succeeded(address, user, Instant::now()),
            None => state.throttle.failed(address, name, Instant::now()),
        }
    }
    Ok(user)
}
