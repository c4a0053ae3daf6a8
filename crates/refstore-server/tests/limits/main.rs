//! The limits that keep hostile or clumsy clients from taking the server:
//! time limits for slow clients, sizes of request heads and bodies,
//! connections per server and per address over HTTP and HTTPS, paths and
//! ref names that try to leave the repository, secrets kept out of the
//! log, and password guessing throttled per address.

#[path = "../support/mod.rs"]
mod support;

mod connections;
mod hostile;
mod logins;
