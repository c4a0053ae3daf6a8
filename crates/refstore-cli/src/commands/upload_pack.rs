//! `refstore upload-pack <dir>`: serve a fetch over standard input and
//! output, as git's clients run it over ssh and file://
//! (`git clone --upload-pack='refstore upload-pack' file://...`). The
//! protocol version comes from `GIT_PROTOCOL`, as the client's transport
//! sets it.

use crate::context::{Fatal, Globals};
use refstore_fs::discover;
use refstore_protocol::repository::OpenError;
use refstore_protocol::upload_pack::{upload_pack, Options};
use refstore_protocol::{ProtocolVersion, Repository};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Arguments of `upload-pack`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Answer one request and exit, as over HTTP: no advertisement first.
    #[arg(long)]
    stateless_rpc: bool,
    /// Only advertise the refs (or, in protocol v2, the capabilities).
    #[arg(long, alias = "http-backend-info-refs")]
    advertise_refs: bool,
    /// Serve <dir> only if it is a git directory itself: do not try
    /// <dir>/.git or <dir>.git.
    #[arg(long)]
    strict: bool,
    /// Give up after <n> seconds without any data from or to the client.
    #[arg(long, value_name = "n", require_equals = true)]
    timeout: Option<u64>,
    /// The repository to serve.
    dir: PathBuf,
}

/// Runs `upload-pack`.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    let dir = globals.cwd().join(&args.dir);
    let not_a_repository = || {
        Fatal::new(format!(
            "'{}' does not appear to be a git repository",
            args.dir.display()
        ))
    };
    let repo = if args.strict {
        if !discover::is_git_directory(globals.vfs().as_ref(), &dir) {
            return Err(not_a_repository());
        }
        let options = discover::Options {
            git_dir: Some(dir.clone()),
            ..discover::Options::default()
        };
        let location = discover::discover(globals.vfs().as_ref(), &dir, &options)
            .map_err(|_| not_a_repository())?;
        refstore_repo::Repository::open_location(
            globals.vfs().clone(),
            location,
            globals.config_overrides(),
        )
    } else {
        refstore_repo::Repository::open(globals.vfs().clone(), &dir, globals.config_overrides())
    }
    .and_then(Repository::serve)
    .map_err(|e| match e {
        OpenError::NotARepository(_) => not_a_repository(),
        other => Fatal::new(other),
    })?;

    let options = Options {
        stateless_rpc: args.stateless_rpc,
        advertise_refs: args.advertise_refs,
        version: ProtocolVersion::from_git_protocol(std::env::var("GIT_PROTOCOL").ok().as_deref()),
    };
    // The standard streams' own buffering would split the protocol's large
    // writes at line ends; their descriptors are used directly instead.
    let stdin = File::from(
        std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map_err(Fatal::new)?,
    );
    let stdout = File::from(
        std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .map_err(Fatal::new)?,
    );
    let result = match args.timeout.filter(|&seconds| seconds > 0) {
        Some(seconds) => {
            let activity = Activity::watch(Duration::from_secs(seconds));
            upload_pack(
                &repo,
                &options,
                &mut Watched::new(stdin, &activity),
                &mut Watched::new(stdout, &activity),
            )
        }
        None => upload_pack(&repo, &options, &mut { stdin }, &mut { stdout }),
    };
    result.map_err(Fatal::new)?;
    Ok(0)
}

/// When data last moved, checked by a watchdog thread that ends the
/// process once the client has been silent for too long (git's
/// `--timeout`): a blocked read cannot be interrupted otherwise.
struct Activity {
    start: Instant,
    last_millis: AtomicU64,
}

impl Activity {
    fn watch(limit: Duration) -> Arc<Activity> {
        let activity = Arc::new(Activity {
            start: Instant::now(),
            last_millis: AtomicU64::new(0),
        });
        let watched = activity.clone();
        std::thread::spawn(move || loop {
            let last = Duration::from_millis(watched.last_millis.load(Ordering::Relaxed));
            let idle = watched.start.elapsed().saturating_sub(last);
            if idle >= limit {
                eprintln!(
                    "fatal: timeout reached: no data from or to the client for {} seconds",
                    limit.as_secs()
                );
                std::process::exit(128);
            }
            std::thread::sleep((limit - idle).min(Duration::from_secs(1)));
        });
        activity
    }

    fn touch(&self) {
        let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_millis.store(now, Ordering::Relaxed);
    }
}

/// A stream that records its activity.
struct Watched<'a, S> {
    inner: S,
    activity: &'a Activity,
}

impl<'a, S> Watched<'a, S> {
    fn new(inner: S, activity: &'a Arc<Activity>) -> Self {
        Watched { inner, activity }
    }
}

impl<S: Read> Read for Watched<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.activity.touch();
        Ok(n)
    }
}

impl<S: Write> Write for Watched<'_, S> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.activity.touch();
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
