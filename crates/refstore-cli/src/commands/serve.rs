//! `refstore serve`: smart HTTP (HTTPS with `--tls-cert`), and SSH with
//! `--ssh-listen`, for every repository below a directory (with
//! `--cluster`, those the cluster holds), and the metrics and health
//! listener with `--metrics-listen`.

#[cfg(feature = "cluster")]
mod catalog;
#[cfg(feature = "cluster")]
mod members;
mod replicate;

use crate::context::{Fatal, Globals};
use refstore_fs::Vfs;
use refstore_protocol::limits::{Limits, SERVE_BIG_FILE_THRESHOLD};
use refstore_server::access::{AccessRules, Reloadable};
use refstore_server::health::Health;
use refstore_server::http::tls::ServerConfig;
use refstore_server::metrics::Metrics;
use refstore_server::metrics_endpoint::MetricsEndpoint;
use refstore_server::ssh::{AuthorizedKeys, SshOptions, SshServer};
use refstore_server::{Capacity, Credentials, ServeOptions, Server};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Arguments of `serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on (`host:port`; port 0 picks a free port).
    #[arg(long, value_name = "addr", default_value = "127.0.0.1:8080")]
    listen: String,
    /// Serve the repositories below this directory.
    #[arg(long, value_name = "dir")]
    root: PathBuf,
    /// Accept pushes from users listed in --credentials.
    #[arg(long)]
    allow_push: bool,
    /// `user:password` or `user:<bcrypt hash>` lines (`htpasswd -B` writes
    /// the latter).
    #[arg(long, value_name = "file")]
    credentials: Option<PathBuf>,
    /// Requests that run a service at once (connections waiting for their
    /// turn are not limited by this).
    #[arg(long, value_name = "n", default_value_t = 16)]
    workers: usize,
    /// Connections open at once over HTTP; beyond, the one idle the
    /// longest is closed to make room, or the new one answered 503 when
    /// all are busy (SSH: closed).
    #[arg(long, value_name = "n", default_value_t = 512)]
    max_connections: usize,
    /// Connections open at once from one client address (IPv6: one /64);
    /// beyond, over HTTP, the address's connection idle the longest is
    /// closed to make room, or the new one answered 503 when all are busy.
    /// One address also runs at most half of
    /// --workers services at once (behind a reverse proxy every client
    /// has the proxy's address).
    #[arg(long, value_name = "n", default_value_t = 32)]
    max_connections_per_ip: usize,
    /// Seconds a client may take to send a request or to start reading a
    /// response before it is dropped (slow clients get one more second
    /// per 64 KiB they moved).
    #[arg(long, value_name = "seconds", default_value_t = 60.0)]
    timeout: f64,
    /// The largest fetch request accepted, in bytes after decompression
    /// (answered 413 over HTTP; over SSH, what a client sends in the whole
    /// session). Sets `refstore.maxFetchRequest` for every served
    /// repository.
    #[arg(long, value_name = "bytes", default_value_t = Limits::default().max_fetch_request)]
    max_fetch_request: u64,
    /// The largest push request (commands, options and pack) accepted, in
    /// bytes after decompression, over every transport (answered 413 over
    /// HTTP, `fatal:` over SSH). Sets `refstore.maxPushRequest` for every
    /// served repository.
    #[arg(long, value_name = "bytes", default_value_t = Limits::default().max_push_request)]
    max_push_request: u64,
    /// The most the objects of one push may inflate to, in bytes, deltas
    /// counted by the size of their result: a push beyond it is refused as
    /// its pack is read, and nothing of it is kept (0: no bound). Sets
    /// `refstore.maxPushInflated` for every served repository.
    #[arg(long, value_name = "bytes", default_value_t = Limits::default().max_push_inflated.unwrap_or(0))]
    max_push_inflated: u64,
    /// The most push options one push may send (they are offered only
    /// where `receive.advertisePushOptions` is true, as git does). Sets
    /// `refstore.maxPushOptions` for every served repository.
    #[arg(long, value_name = "n", default_value_t = Limits::default().max_push_options)]
    max_push_options: u64,
    /// The most bytes the push options of one push may hold together.
    /// Sets `refstore.maxPushOptionsSize` for every served repository.
    #[arg(long, value_name = "bytes", default_value_t = Limits::default().max_push_options_size)]
    max_push_options_size: u64,
    /// Objects of this size or more are never held whole in memory: a
    /// pushed one is hashed, checked and stored in pieces, and deltas of
    /// them are refused, as git does above `core.bigFileThreshold` (the
    /// repository's `core.bigFileThreshold` applies where lower). Every
    /// request runs in this one process, so this bounds what concurrent
    /// pushes of large files cost. Sets `refstore.bigFileThreshold` for
    /// every served repository (0: only `core.bigFileThreshold` decides).
    #[arg(long, value_name = "bytes", default_value_t = SERVE_BIG_FILE_THRESHOLD)]
    big_file_threshold: u64,
    /// Threads that run `maintenance run --auto` for a repository in the
    /// background after pushes to it (0: none).
    #[arg(long, value_name = "n", default_value_t = 1)]
    maintenance_workers: usize,
    /// Who may read and push which repository: lines
    /// `<user|*> <read|write|admin> <repo-glob>` (write implies read;
    /// admin implies write and, with --cluster, allows the admin
    /// endpoint's operations; `*` as the user is everyone, anonymous
    /// clients included). Read again on
    /// SIGHUP. Without it everyone reads and --credentials users push
    /// with --allow-push.
    #[arg(long, value_name = "file")]
    access: Option<PathBuf>,
    /// Serve Prometheus metrics (`GET /metrics`, every series named
    /// `refstore_…`) and a health check (`GET /healthz`) on this address
    /// (`host:port`; port 0 picks a free port), apart from the Git
    /// transports. Meant for a monitoring network: it asks for no
    /// credentials.
    #[arg(long, value_name = "addr")]
    metrics_listen: Option<String>,
    /// Seconds to go on serving after SIGTERM or SIGINT while `/healthz`
    /// answers `draining`, so that a load balancer checking it sends new
    /// clients elsewhere before anything is refused; then no new
    /// connections are accepted and the requests in flight finish. A
    /// second signal ends the drain time at once. Default: 5 with
    /// --metrics-listen, 0 (stop accepting at once) without, where nothing
    /// reports draining.
    #[arg(long, value_name = "seconds")]
    drain_time: Option<f64>,
    /// How diagnostic and access-log lines on standard error are written:
    /// `text` for people, `json` (one object per line) for log collectors.
    #[arg(long, value_name = "format", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Also serve SSH on this address (`host:port`): git's clients use
    /// `ssh://git@host:port/<repo>`, any login name, and their key says
    /// who they are. Needs --ssh-host-key and --ssh-authorized-keys.
    #[arg(long, value_name = "addr", requires_all = ["ssh_host_key", "ssh_authorized_keys"])]
    ssh_listen: Option<String>,
    /// The SSH server's host key: an OpenSSH private key file without a
    /// passphrase (`ssh-keygen -t ed25519 -N '' -f <file>`).
    #[arg(long, value_name = "file", requires = "ssh_listen")]
    ssh_host_key: Option<PathBuf>,
    /// The users' public keys, in OpenSSH's authorized_keys format; the
    /// comment of each key names its user (`ssh-ed25519 AAAA… alice`).
    /// Read again on SIGHUP. Without --access these users may push when
    /// --allow-push is given.
    #[arg(long, value_name = "file", requires = "ssh_listen")]
    ssh_authorized_keys: Option<PathBuf>,
    /// Serve HTTPS with this certificate (PEM, the server's certificate
    /// first, then any intermediates). Read again on SIGHUP.
    #[arg(long, value_name = "pem", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "pem", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Print the address the server listens on to standard output once it
    /// is ready (useful with port 0); with --ssh-listen, the SSH address
    /// follows on the next line, and with --metrics-listen the metrics
    /// address after it.
    #[arg(long)]
    print_address: bool,
    #[command(flatten)]
    replicate: Box<replicate::ReplicationArgs>,
    /// Join the cluster this file describes: the served repositories'
    /// refs are kept in the cluster's etcd, only the repositories the
    /// cluster holds are served (`refstore cluster create`, or `import`
    /// for an existing one) and the node creates, removes and renames its
    /// copies as the cluster says; pushes are stored as packs, and
    /// background maintenance is off.
    #[arg(long, value_name = "file")]
    cluster: Option<PathBuf>,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (`timestamp`, `level`, `fields` with the
    /// `message`, `target`).
    Json,
}

/// The drain time when `--metrics-listen` is given and `--drain-time` is
/// not: a load balancer checking `/healthz` every second or two, and
/// taking a failed check or two to give up on a server, has moved new
/// clients away well within it.
const DEFAULT_DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// The pack cache's directory below the served root, unless
/// `refstore.packCache.path` names another.
const PACK_CACHE_DIR: &str = ".refstore-pack-cache";

/// Runs `serve` until SIGTERM or SIGINT.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    crate::allocator::few_arenas();
    init_logging(args.log_format);
    let mut options = serve_options(&args, globals)?;
    let drain_time = drain_time(&args)?;
    open_pack_cache(&options, globals);
    options.replication = replicate::replica(&args.replicate, globals)?;
    if let Some(path) = &args.cluster {
        join_cluster(&mut options, globals, &globals.cwd().join(path))?;
    }
    let reloads = read_login_files(&args, globals, &mut options)?;
    let signal_error = |e| Fatal::new(format!("cannot handle signals: {e}"));
    let signalled = refstore_server::shutdown::on_signals().map_err(signal_error)?;
    // The transports stop accepting on this, once draining is over.
    let shutdown =
        refstore_server::shutdown::drain_on(signalled, options.health.clone(), drain_time)
            .map_err(signal_error)?;
    let hangup = refstore_server::shutdown::on_hangup().map_err(signal_error)?;
    let ssh_keys = reloads.ssh_keys.as_ref().map(|(_, keys)| keys.clone());
    reload_on_hangup(globals.vfs().clone(), hangup, reloads);
    serve_until(&args, globals, options, ssh_keys.as_ref(), &shutdown)?;
    Ok(0)
}

/// The options the command line gives directly: workers, connections,
/// the timeout, request limits and configuration overrides.
fn serve_options(args: &Args, globals: &Globals) -> Result<ServeOptions, Fatal> {
    let mut options = ServeOptions::new(globals.cwd().join(&args.root));
    options.workers = args.workers;
    options.maintenance_workers = args.maintenance_workers;
    options.max_connections = args.max_connections.max(1);
    options.max_connections_per_ip = args.max_connections_per_ip.max(1);
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(Fatal::new(format!(
            "--timeout {}: give a positive number of seconds",
            args.timeout
        )));
    }
    options.timeout = std::time::Duration::from_secs_f64(args.timeout);
    options.allow_push = args.allow_push;
    options.limits = Limits {
        max_fetch_request: args.max_fetch_request,
        max_push_request: args.max_push_request,
        max_push_inflated: (args.max_push_inflated > 0).then_some(args.max_push_inflated),
        max_push_options: args.max_push_options,
        max_push_options_size: args.max_push_options_size,
        big_file_threshold: (args.big_file_threshold > 0).then_some(args.big_file_threshold),
    };
    options.config_overrides = globals.config_overrides().to_vec();
    Ok(options)
}

/// Identical fetches (a CI system's clone storm) share one pack: the pack
/// cache is on, below the served root unless configured elsewhere.
fn open_pack_cache(options: &ServeOptions, globals: &Globals) {
    refstore_protocol::pack_cache::set_defaults(refstore_protocol::pack_cache::Defaults {
        enabled: true,
        path: Some(options.root.join(PACK_CACHE_DIR)),
    });
    if let Ok(config) = refstore_fs::config::Config::load(None, &options.config_overrides) {
        refstore_protocol::pack_cache::open_at_start(globals.vfs().clone(), &config, &options.root);
    }
}

/// Reads the files that say who may log in and do what, and the TLS
/// certificate, into `options`; gives them with their paths, for SIGHUP
/// to read again. Refuses `--allow-push` when no one could log in.
fn read_login_files(
    args: &Args,
    globals: &Globals,
    options: &mut ServeOptions,
) -> Result<Reloads, Fatal> {
    let vfs = globals.vfs().as_ref();
    if let Some(path) = &args.credentials {
        let path = globals.cwd().join(path);
        options.credentials =
            read_parsed(vfs, &path, "credentials", Credentials::parse).map_err(Fatal::new)?;
        for warning in options.credentials.warnings() {
            tracing::warn!("--credentials {}: {warning}", path.display());
        }
    }
    let access_file = args.access.as_ref().map(|path| globals.cwd().join(path));
    if let Some(path) = &access_file {
        let rules = read_access(vfs, path).map_err(Fatal::new)?;
        options.access = Some(Arc::new(Reloadable::new(rules)));
    }
    let keys_file = args
        .ssh_authorized_keys
        .as_ref()
        .map(|path| globals.cwd().join(path));
    let ssh_keys = match &keys_file {
        Some(path) => Some(Arc::new(Reloadable::new(
            read_authorized_keys(vfs, path).map_err(Fatal::new)?,
        ))),
        None => None,
    };
    let no_keys = ssh_keys.as_ref().is_none_or(|keys| keys.get().is_empty());
    let tls_files = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some((globals.cwd().join(cert), globals.cwd().join(key))),
        _ => None,
    };
    if let Some(files) = &tls_files {
        let config = read_tls(vfs, files).map_err(Fatal::new)?;
        options.tls = Some(Arc::new(Reloadable::new(config)));
    }
    if args.allow_push && options.credentials.is_empty() && no_keys {
        return Err(Fatal::new(
            "--allow-push needs --credentials <file> or --ssh-authorized-keys <file> with at least one user: pushes are always authenticated",
        ));
    }
    Ok(Reloads {
        access: access_file.zip(options.access.clone()),
        tls: tls_files.zip(options.tls.clone()),
        ssh_keys: keys_file.zip(ssh_keys),
    })
}

/// Binds HTTP, SSH (if asked for) and the metrics listener (if asked
/// for), serves until `shutdown`, and returns once all have stopped.
fn serve_until(
    args: &Args,
    globals: &Globals,
    options: ServeOptions,
    ssh_keys: Option<&Arc<Reloadable<AuthorizedKeys>>>,
    shutdown: &Arc<AtomicBool>,
) -> Result<(), Fatal> {
    // The health listener outlives the transports: it answers `draining`
    // until the requests in flight are done.
    let transports_done = Arc::new(AtomicBool::new(false));
    let metrics = options.metrics.clone();
    let health = options.health.clone();
    let server =
        Server::bind(&args.listen, options.clone(), globals.vfs().clone()).map_err(Fatal::new)?;
    replicate::start_repair(&args.replicate, &options, globals, shutdown)?;
    let ssh = bind_ssh(args, globals, options, ssh_keys, server.capacity())?;
    let endpoint = match &args.metrics_listen {
        Some(addr) => Some(start_metrics(addr, &metrics, &health, &transports_done)?),
        None => None,
    };
    if args.print_address {
        println!("{}", server.local_addr());
        if let Some(ssh) = &ssh {
            println!("{}", ssh.local_addr());
        }
        if let Some(endpoint) = &endpoint {
            println!("{}", endpoint.local_addr());
        }
    }
    let shutdown_ssh = shutdown.clone();
    let ssh = ssh.map(|ssh| {
        std::thread::Builder::new()
            .name("refstore-ssh".into())
            .spawn(move || ssh.run(&shutdown_ssh))
            .expect("starting a thread at startup")
    });
    server.run(shutdown);
    if let Some(ssh) = ssh {
        let _ = ssh.join();
    }
    transports_done.store(true, Ordering::Relaxed);
    if let Some(endpoint) = endpoint {
        endpoint.join();
    }
    Ok(())
}

/// `--drain-time`, or its default.
fn drain_time(args: &Args) -> Result<std::time::Duration, Fatal> {
    match args.drain_time {
        None if args.metrics_listen.is_some() => Ok(DEFAULT_DRAIN_TIME),
        None => Ok(std::time::Duration::ZERO),
        Some(seconds) if seconds.is_finite() && seconds >= 0.0 => {
            Ok(std::time::Duration::from_secs_f64(seconds))
        }
        Some(seconds) => Err(Fatal::new(format!(
            "--drain-time {seconds}: give a number of seconds (0: stop accepting at once)"
        ))),
    }
}

/// Serves the repositories' refs from the cluster `path` describes, and
/// copies every push's objects to `object_copies` of its nodes before the
/// refs commit. Pushes are kept as packs (`receive.unpackLimit=0`), the
/// unit nodes copy; background maintenance rolls them up with the
/// cluster's refs (`refstore_maint::Repo::with_cluster_refs`: bitmaps for
/// etcd's tips, pruning judged by them and a grace period), never the
/// copy's own ref store.
#[cfg(feature = "cluster")]
fn join_cluster(options: &mut ServeOptions, globals: &Globals, path: &Path) -> Result<(), Fatal> {
    if options.replication.is_some() {
        return Err(Fatal::new(
            "--cluster names the nodes itself; leave out the --replicate-* flags",
        ));
    }
    let config = super::cluster::read_config(globals.vfs().as_ref(), path)?;
    let cluster = refstore_cluster::Cluster::connect(config).map_err(Fatal::new)?;
    let members = members::at_start(&cluster)?;
    options.replication = replicate::from_cluster(&cluster.config, &members, path, globals)?;
    if options.replication.is_none() {
        // A node alone keeps every push as a pack all the same, so nodes
        // added later have whole packs to copy.
        options
            .config_overrides
            .push(refstore_fs::config::Override {
                key: "receive.unpackLimit".to_owned(),
                value: Some("0".to_owned()),
            });
    }
    // The grace period of pruning on this node is at least the longest a
    // push may take between its pack reaching a node and its refs
    // committing: twice the sum of the peer and request timeouts. Put
    // first, so that a `-c refstore.clusterPruneFloor` given to serve
    // replaces it.
    let peer_timeout = cluster
        .config
        .peer_timeout
        .unwrap_or(refstore_replica::DEFAULT_PEER_TIMEOUT);
    let floor = 2 * (peer_timeout + options.timeout);
    options.config_overrides.insert(
        0,
        refstore_fs::config::Override {
            key: "refstore.clusterPruneFloor".to_owned(),
            value: Some(floor.as_secs().max(1).to_string()),
        },
    );
    // Repositories are named by the server (`refstore_server::authorize`):
    // their resolved path below the root, as opened.
    let refs = Arc::new(super::cluster::ClusterRefs::new(cluster.clone()));
    // Catching up copies what etcd's refs reach and the node lacks.
    if let Some(replica) = &options.replication {
        replica.judge_by(refs.clone());
    }
    options.ref_source = Some(refs);
    // Reflog expiry, compaction and defragmentation of etcd, by whichever
    // node leads them.
    refstore_cluster::housekeeping::Housekeeping::start(cluster.clone());
    // What the records say is applied before anything is served.
    let catalog =
        catalog::NodeCatalog::new(cluster.clone(), globals.vfs().clone(), options.root.clone());
    catalog.start();
    members::follow(cluster, options.replication.clone(), catalog.clone());
    options.catalog = Some(catalog);
    Ok(())
}

/// `--cluster` in a build without the `cluster` feature.
#[cfg(not(feature = "cluster"))]
fn join_cluster(_: &mut ServeOptions, _: &Globals, _: &Path) -> Result<(), Fatal> {
    Err(super::cluster::missing())
}

/// Starts the metrics listener and makes `metrics` the observer of the
/// storage and protocol layers, whose reports only a listener can show.
fn start_metrics(
    addr: &str,
    metrics: &Arc<Metrics>,
    health: &Health,
    shutdown: &Arc<AtomicBool>,
) -> Result<MetricsEndpoint, Fatal> {
    let endpoint = MetricsEndpoint::start(addr, metrics.clone(), health.clone(), shutdown.clone())
        .map_err(Fatal::new)?;
    Metrics::install(metrics);
    tracing::info!(addr = %endpoint.local_addr(), "serving metrics");
    Ok(endpoint)
}

/// The SSH server of `--ssh-listen`, bound, if asked for.
fn bind_ssh(
    args: &Args,
    globals: &Globals,
    options: ServeOptions,
    keys: Option<&Arc<Reloadable<AuthorizedKeys>>>,
    capacity: Capacity,
) -> Result<Option<SshServer>, Fatal> {
    let (Some(addr), Some(host_key), Some(keys)) = (&args.ssh_listen, &args.ssh_host_key, keys)
    else {
        return Ok(None);
    };
    let path = globals.cwd().join(host_key);
    let host_key = read_parsed(
        globals.vfs().as_ref(),
        &path,
        "host key",
        refstore_server::ssh::keys::host_key,
    )
    .map_err(Fatal::new)?;
    let ssh_options = SshOptions {
        host_key,
        authorized_keys: keys.clone(),
    };
    SshServer::bind(addr, ssh_options, options, globals.vfs().clone(), capacity)
        .map(Some)
        .map_err(Fatal::new)
}

/// Reads a text file named on the command line and parses it; errors
/// name the file as `<what> '<path>'`.
fn read_parsed<T, E: std::fmt::Display>(
    vfs: &dyn Vfs,
    path: &Path,
    what: &str,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<T, String> {
    let bytes = vfs.read(path).map_err(|e| e.to_string())?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{what} '{}' is not UTF-8", path.display()))?;
    parse(&text).map_err(|e| format!("{what} '{}': {e}", path.display()))
}

/// Reads and parses an authorized keys file.
fn read_authorized_keys(vfs: &dyn Vfs, path: &Path) -> Result<AuthorizedKeys, String> {
    read_parsed(vfs, path, "authorized keys", AuthorizedKeys::parse)
}

/// Reads and parses an access file.
fn read_access(vfs: &dyn Vfs, path: &Path) -> Result<AccessRules, String> {
    read_parsed(vfs, path, "access rules", AccessRules::parse)
}

/// The certificate and key files of HTTPS.
type TlsFiles = (PathBuf, PathBuf);

/// Reads a certificate and its key and makes a TLS configuration of them.
fn read_tls(vfs: &dyn Vfs, (cert, key): &TlsFiles) -> Result<ServerConfig, String> {
    let cert_pem = vfs
        .read(cert)
        .map_err(|e| format!("--tls-cert '{}': {e}", cert.display()))?;
    let key_pem = vfs
        .read(key)
        .map_err(|e| format!("--tls-key '{}': {e}", key.display()))?;
    refstore_server::http::tls::server_config(&cert_pem, &key_pem).map_err(|e| {
        format!(
            "TLS certificate '{}' and key '{}': {e}",
            cert.display(),
            key.display()
        )
    })
}

/// What SIGHUP reloads: each file named on the command line and where
/// its contents are in force.
struct Reloads {
    access: Option<(PathBuf, Arc<Reloadable<AccessRules>>)>,
    tls: Option<(TlsFiles, Arc<Reloadable<ServerConfig>>)>,
    ssh_keys: Option<(PathBuf, Arc<Reloadable<AuthorizedKeys>>)>,
}

/// How often the reloading thread looks at the SIGHUP flag.
const HANGUP_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// Re-reads the files named on the command line whenever SIGHUP arrives.
/// A file that no longer parses is reported and what is in force stays.
fn reload_on_hangup(vfs: Arc<dyn Vfs>, hangup: Arc<AtomicBool>, reloads: Reloads) {
    std::thread::Builder::new()
        .name("refstore-reload".into())
        .spawn(move || loop {
            std::thread::sleep(HANGUP_POLL);
            if !hangup.swap(false, Ordering::Relaxed) {
                continue;
            }
            if let Some((path, access)) = &reloads.access {
                match read_access(vfs.as_ref(), path) {
                    Ok(rules) => {
                        access.set(rules);
                        tracing::info!(file = %path.display(), "access rules reloaded");
                    }
                    Err(e) => tracing::error!("keeping the access rules in force: {e}"),
                }
            }
            if let Some((files, tls)) = &reloads.tls {
                match read_tls(vfs.as_ref(), files) {
                    Ok(config) => {
                        tls.set(config);
                        tracing::info!(file = %files.0.display(), "TLS certificate reloaded");
                    }
                    Err(e) => tracing::error!("keeping the TLS certificate in force: {e}"),
                }
            }
            if let Some((path, keys)) = &reloads.ssh_keys {
                match read_authorized_keys(vfs.as_ref(), path) {
                    Ok(read) => {
                        keys.set(read);
                        tracing::info!(file = %path.display(), "authorized keys reloaded");
                    }
                    Err(e) => tracing::error!("keeping the authorized keys in force: {e}"),
                }
            }
        })
        .expect("starting a thread at startup");
}

/// Access-log and diagnostic lines on standard error, in `format`;
/// `RUST_LOG` filters them (default: info).
fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        // Colour codes would corrupt the JSON strings.
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    };
}
