//! `refstore serve`: smart HTTP for every repository below a directory.

use crate::context::{Fatal, Globals};
use refstore_server::{Credentials, ServeOptions, Server};
use std::path::PathBuf;

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
    /// Connections open at once; more are answered 503.
    #[arg(long, value_name = "n", default_value_t = 512)]
    max_connections: usize,
    /// Seconds a client may take to send a request or to start reading a
    /// response before it is dropped (slow clients get one more second
    /// per 64 KiB they moved).
    #[arg(long, value_name = "seconds", default_value_t = 60.0)]
    timeout: f64,
    /// The largest fetch request body accepted, in bytes after
    /// decompression (answered 413 beyond).
    #[arg(long, value_name = "bytes", default_value_t = 10 << 20)]
    max_fetch_request: u64,
    /// The largest push request body (commands and pack) accepted, in
    /// bytes after decompression (answered 413 beyond).
    #[arg(long, value_name = "bytes", default_value_t = 8 << 30)]
    max_push_request: u64,
    /// Threads that run `maintenance run --auto` for a repository in the
    /// background after pushes to it (0: none).
    #[arg(long, value_name = "n", default_value_t = 1)]
    maintenance_workers: usize,
    /// Print the address the server listens on to standard output once it
    /// is ready (useful with port 0).
    #[arg(long)]
    print_address: bool,
}

/// Runs `serve` until SIGTERM or SIGINT.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    init_logging();
    let mut options = ServeOptions::new(globals.cwd().join(&args.root));
    options.workers = args.workers;
    options.maintenance_workers = args.maintenance_workers;
    options.max_connections = args.max_connections.max(1);
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(Fatal::new(format!(
            "--timeout {}: give a positive number of seconds",
            args.timeout
        )));
    }
    options.timeout = std::time::Duration::from_secs_f64(args.timeout);
    options.allow_push = args.allow_push;
    options.max_fetch_request = args.max_fetch_request;
    options.max_push_request = args.max_push_request;
    options.config_overrides = globals.config_overrides().to_vec();
    if let Some(path) = &args.credentials {
        let path = globals.cwd().join(path);
        let bytes = globals.vfs().read(&path).map_err(Fatal::new)?;
        let text = String::from_utf8(bytes)
            .map_err(|_| Fatal::new(format!("credentials '{}' are not UTF-8", path.display())))?;
        options.credentials = Credentials::parse(&text)
            .map_err(|e| Fatal::new(format!("credentials '{}': {e}", path.display())))?;
    }
    if args.allow_push && options.credentials.is_empty() {
        return Err(Fatal::new(
            "--allow-push needs --credentials <file> with at least one user: pushes are always authenticated",
        ));
    }
    let shutdown = refstore_server::shutdown::on_signals()
        .map_err(|e| Fatal::new(format!("cannot handle signals: {e}")))?;
    let server = Server::bind(&args.listen, options, globals.vfs().clone()).map_err(Fatal::new)?;
    if args.print_address {
        println!("{}", server.local_addr());
    }
    server.run(&shutdown);
    Ok(0)
}

/// Access-log and diagnostic lines on standard error; `RUST_LOG` filters
/// them (default: info).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
