//! One SSH connection as russh sees it: public-key authentication against
//! the authorized keys, session channels (a few per connection), the
//! `GIT_PROTOCOL` environment variable and the `exec` request that starts
//! a service, and the client's data fed to that service.

use super::idle::Idle;
use super::service::{self, Request};
use super::shared::Shared;
use crate::metrics::Rejection;
use bytes::Bytes;
use russh::keys::{HashAlg, PublicKey};
use russh::server::{Auth, ChannelOpenHandle, Msg, PublicKeyOffer, Session, VerifiedPublicKey};
use russh::{Channel, ChannelId, ChannelOpenFailure, ChannelWriteHalf, MethodKind, MethodSet, Pty};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Session channels open at once on one connection; git uses one. More
/// are refused, so a connection cannot multiply what it holds.
pub const MAX_CHANNELS: usize = 4;

/// Chunks of client data queued for a service before the session waits
/// for the service to read (each at most one SSH packet, 32 KiB).
const QUEUED_CHUNKS: usize = 16;

/// The longest `GIT_PROTOCOL` value kept; git sends a few bytes.
const MAX_PROTOCOL: usize = 256;

/// One connection.
pub struct Connection {
    shared: Arc<Shared>,
    peer: SocketAddr,
    idle: Arc<Idle>,
    user: Option<String>,
    /// The fingerprint of the last key offered that nobody owns.
    refused_key: Option<String>,
    channels: HashMap<ChannelId, Open>,
}

/// A session channel.
#[derive(Default)]
struct Open {
    /// Where the service's output goes; taken when the channel's one
    /// command starts.
    writer: Option<ChannelWriteHalf<Msg>>,
    /// `GIT_PROTOCOL`, as the client set it.
    protocol: Option<String>,
    /// The client's data for the running service; `None` before it
    /// starts and after the client's EOF.
    input: Option<mpsc::Sender<Bytes>>,
}

impl Connection {
    /// A connection from `peer`, idle until it runs a service.
    pub fn new(shared: Arc<Shared>, peer: SocketAddr, idle: Arc<Idle>) -> Connection {
        Connection {
            shared,
            peer,
            idle,
            user: None,
            refused_key: None,
            channels: HashMap::new(),
        }
    }

    fn known(&self, key: &PublicKey) -> Option<String> {
        self.shared.keys.get().user_of(key).map(str::to_owned)
    }

    fn publickey_only() -> Auth {
        Auth::Reject {
            proceed_with_methods: Some(MethodSet::from(&[MethodKind::PublicKey][..])),
            partial_success: false,
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // Counted once the connection is over: a client offers its keys
        // in turn, and only one of them needs to be known.
        if let (None, Some(key)) = (&self.user, &self.refused_key) {
            tracing::info!(client = %self.peer, key = %key,
                "ssh: refused: no authorized key offered");
            self.shared
                .options
                .metrics
                .rejected(Rejection::Unauthorized);
        }
    }
}

impl russh::server::Handler for Connection {
    type Error = russh::Error;

    async fn auth_none(&mut self, _user: &str) -> Result<Auth, Self::Error> {
        Ok(Self::publickey_only())
    }

    async fn auth_publickey_offered(
        &mut self,
        _user: &str,
        offer: PublicKeyOffer<'_>,
    ) -> Result<Auth, Self::Error> {
        // Any login name will do (git@host): the key decides the user.
        if self.known(offer.public_key).is_some() {
            Ok(Auth::Accept)
        } else {
            self.refused_key = Some(offer.public_key.fingerprint(HashAlg::Sha256).to_string());
            Ok(Self::publickey_only())
        }
    }

    async fn auth_publickey(
        &mut self,
        _user: &str,
        key: VerifiedPublicKey<'_>,
    ) -> Result<Auth, Self::Error> {
        match self.known(key.public_key) {
            Some(user) => {
                tracing::debug!(client = %self.peer, user = %user, "ssh: authenticated");
                self.user = Some(user);
                Ok(Auth::Accept)
            }
            None => Ok(Self::publickey_only()),
        }
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        if self.channels.len() >= MAX_CHANNELS {
            tracing::warn!(client = %self.peer, "ssh: refusing a channel beyond {MAX_CHANNELS}");
            reply.reject(ChannelOpenFailure::ResourceShortage).await;
            return Ok(());
        }
        // Requests and data reach the handler's callbacks; the read half
        // would only queue copies of them.
        let (_, writer) = channel.split();
        let id = writer.id();
        self.channels.insert(
            id,
            Open {
                writer: Some(writer),
                ..Open::default()
            },
        );
        reply.accept().await;
        Ok(())
    }

    async fn env_request(
        &mut self,
        channel: ChannelId,
        name: &str,
        value: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        match self.channels.get_mut(&channel) {
            Some(open)
                if name == "GIT_PROTOCOL"
                    && open.writer.is_some()
                    && value.len() <= MAX_PROTOCOL =>
            {
                open.protocol = Some(value.to_owned());
                session.channel_success(channel)
            }
            _ => session.channel_failure(channel),
        }
    }

    async fn pty_request(
        &mut self,
        channel: ChannelId,
        _term: &str,
        _columns: u32,
        _rows: u32,
        _width: u32,
        _height: u32,
        _modes: &[(Pty, u32)],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_failure(channel)
    }

    async fn shell_request(
        &mut self,
        channel: ChannelId,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        // `ssh git@host` to check a key: say whose it is, as hosts do.
        let (Some(user), Some(open)) = (&self.user, self.channels.get_mut(&channel)) else {
            return session.channel_failure(channel);
        };
        let Some(writer) = open.writer.take() else {
            return session.channel_failure(channel);
        };
        session.channel_success(channel)?;
        tokio::spawn(service::greet(writer, user.clone()));
        Ok(())
    }

    async fn subsystem_request(
        &mut self,
        channel: ChannelId,
        _name: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_failure(channel)
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        let (Some(user), Some(open)) = (&self.user, self.channels.get_mut(&channel)) else {
            return session.channel_failure(channel);
        };
        let Some(writer) = open.writer.take() else {
            // One command per channel.
            return session.channel_failure(channel);
        };
        session.channel_success(channel)?;
        let (sender, receiver) = mpsc::channel(QUEUED_CHUNKS);
        open.input = Some(sender);
        let request = Request {
            user: user.clone(),
            peer: self.peer,
            command: data.to_vec(),
            protocol: open.protocol.clone(),
        };
        let busy = self.idle.busy();
        tokio::spawn(service::serve(
            self.shared.clone(),
            request,
            receiver,
            writer,
            busy,
        ));
        Ok(())
    }

    async fn data(
        &mut self,
        channel: ChannelId,
        data: &[u8],
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        let input = self
            .channels
            .get(&channel)
            .and_then(|open| open.input.clone());
        if let Some(input) = input {
            // Waits while the service's queue is full: this is what slows
            // the client down to the service's pace. A service that ended
            // has dropped its end; its remaining input is discarded.
            let _ = input.send(Bytes::copy_from_slice(data)).await;
        }
        Ok(())
    }

    async fn channel_eof(
        &mut self,
        channel: ChannelId,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        if let Some(open) = self.channels.get_mut(&channel) {
            open.input = None;
        }
        Ok(())
    }

    async fn channel_close(
        &mut self,
        channel: ChannelId,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.channels.remove(&channel);
        Ok(())
    }
}
