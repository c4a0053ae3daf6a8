//! What applying a push's commands needs besides them: the repository,
//! its hooks, the relay of their output to the client, and the messages
//! gathered for the report.

use super::hooks::Hooks;
use super::relay::Relay;
use crate::Repository;
use std::io::Write;

/// What applying the commands needs besides them.
pub(crate) struct Context<'a, 'r, W: Write> {
    pub repo: &'a Repository,
    pub hooks: &'a Hooks,
    pub relay: &'a mut Relay<'r, W>,
    pub messages: &'a mut Vec<String>,
}
