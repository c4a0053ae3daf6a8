//! How `refstore serve` behaves, for every transport: the served root,
//! who may push, limits, and where refs and objects go; and how a served
//! repository is opened under those options.

use crate::access::{AccessRules, Reloadable};
use crate::auth::Credentials;
use crate::catalog::Catalog;
use crate::confine::Served;
use crate::health::Health;
use crate::metrics::Metrics;
use crate::ref_source::RefSource;
use refstore_fs::Vfs;
use refstore_protocol::repository::{OpenError, Repository};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Repositories are served from below this directory.
    pub root: PathBuf,
    /// Accept pushes (from authenticated users only).
    pub allow_push: bool,
    /// Who may push.
    pub credentials: Credentials,
    /// Requests that run a service at once.
    pub workers: usize,
    /// Connections open at once; beyond, the one idle the longest is
    /// closed, or the new one answered 503 if none is idle.
    pub max_connections: usize,
    /// Connections open at once from one client address (IPv6: one /64),
    /// so that one client cannot take them all; beyond, the address's
    /// connection idle the longest is closed, or the new one answered 503
    /// if none is idle.
    pub max_connections_per_ip: usize,
    /// How long a client may take to send a request, or to start reading
    /// a response, before it is dropped (plus one second per 64 KiB it
    /// moved, so large transfers at any usable speed are not cut off).
    pub timeout: Duration,
    /// What a client may send: request sizes (after decompression), what
    /// a push inflates to, push options. The same for every transport:
    /// given to every repository opened as configuration, which the
    /// services enforce (see [`refstore_protocol::limits`]).
    pub limits: refstore_protocol::limits::Limits,
    /// Configuration given on the command line (`-c name=value`), applied
    /// to every served repository.
    pub config_overrides: Vec<refstore_fs::config::Override>,
    /// Threads running `maintenance run --auto` after pushes (0: none).
    pub maintenance_workers: usize,
    /// Who may read and push what (`--access`); `None`: everyone reads,
    /// `credentials` users push when `allow_push`. Replaced on SIGHUP.
    pub access: Option<Arc<Reloadable<AccessRules>>>,
    /// Where every transport counts what it does.
    pub metrics: Arc<Metrics>,
    /// Serve HTTPS with this configuration (`--tls-cert`, `--tls-key`);
    /// replaced on SIGHUP, new connections use the new certificate.
    pub tls: Option<Arc<Reloadable<rustls::ServerConfig>>>,
    /// Replicate pushes' objects to the other nodes of a cluster, and
    /// serve them the internal replication endpoint (`None`: a node
    /// alone). Pushes then always keep their objects as a pack
    /// (`receive.unpackLimit` is 0): packs are what nodes exchange.
    pub replication: Option<Arc<refstore_replica::Replica>>,
    /// Where served repositories' refs are kept instead of their own ref
    /// store (`--cluster`); `None`: their own.
    pub ref_source: Option<Arc<dyn RefSource>>,
    /// Which repositories may be served, and the admin endpoint's
    /// operations on them (`--cluster`: the cluster's records); `None`:
    /// every repository below the root, and no admin endpoint.
    pub catalog: Option<Arc<dyn Catalog>>,
    /// Whether new requests should be sent here, as `/healthz` of
    /// `--metrics-listen` reports it to a load balancer.
    pub health: Health,
}

impl ServeOptions {
    /// Read-only serving of `root` with default limits.
    pub fn new(root: PathBuf) -> Self {
        ServeOptions {
            root,
            allow_push: false,
            credentials: Credentials::default(),
            workers: 16,
            max_connections: 512,
            max_connections_per_ip: 32,
            timeout: Duration::from_secs(60),
            limits: refstore_protocol::limits::Limits::default(),
            config_overrides: Vec::new(),
            maintenance_workers: 1,
            access: None,
            metrics: Arc::new(Metrics::new()),
            tls: None,
            replication: None,
            ref_source: None,
            catalog: None,
            health: Health::ready(),
        }
    }

    /// The configuration a served repository is opened with: the command
    /// line's, the server's limits, and, when replicating, pushes kept as
    /// packs.
    pub fn repository_overrides(&self) -> Vec<refstore_fs::config::Override> {
        let mut overrides = self.config_overrides.clone();
        overrides.extend(self.limits.overrides());
        if self.replication.is_some() {
            overrides.push(refstore_fs::config::Override {
                key: "receive.unpackLimit".to_owned(),
                value: Some("0".to_owned()),
            });
        }
        overrides
    }
    /// Opens the repository `served` (found and confined by
    /// [`crate::authorize`]) exactly where it is, with the server's
    /// configuration; with the refs the server's [`RefSource`] gives, when
    /// it has one; and, on a replicating node, with the steps that copy a
    /// push's objects to other nodes and fetch what this node lacks from
    /// them. All of them know it by its name.
    pub fn open_repository(
        &self,
        vfs: Arc<dyn Vfs>,
        served: &Served,
    ) -> Result<Repository, OpenError> {
        let overrides = self.repository_overrides();
        let opened =
            refstore_repo::Repository::open_location(vfs, served.location.clone(), &overrides)?;
        let mut repo = Repository::serve(opened)?;
        if let Some(source) = &self.ref_source {
            repo.refs = source.refs(&repo, &served.name, Some(served.found));
        }
        if let Some(replica) = &self.replication {
            let steps = replica.for_repository(&served.name);
            repo.objects_stored = Some(steps.clone());
            repo.objects_wanted = Some(steps);
        }
        Ok(repo)
    }
}
