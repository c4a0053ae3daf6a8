//! The `refstore` command: git-compatible reference plumbing and a
//! smart-protocol server.
//!
//! Global options (`-C`, `--git-dir`, `-c`) and repository discovery follow
//! git, and so do exit codes: 0 success, 1 a negative answer, 128 a fatal
//! error (`fatal: ...`), 129 a usage error.

mod commands;
mod context;
mod progress;

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// Git-compatible reference store and smart-protocol server.
#[derive(Debug, Parser)]
#[command(name = "refstore", about, long_about = None, disable_version_flag = true)]
struct Cli {
    /// Run as if refstore was started in <path> (may be given several times).
    #[arg(short = 'C', value_name = "path", action = clap::ArgAction::Append)]
    chdir: Vec<PathBuf>,
    /// Use <path> as the repository's git directory.
    #[arg(long = "git-dir", value_name = "path")]
    git_dir: Option<PathBuf>,
    /// Set a configuration value for this invocation (`name=value`; `name`
    /// alone means true).
    #[arg(short = 'c', value_name = "name=value", action = clap::ArgAction::Append)]
    config: Vec<String>,
    /// Print refstore's version.
    #[arg(long)]
    version: bool,
    #[command(subcommand)]
    command: Option<commands::Command>,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 129 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    if cli.version {
        println!("refstore version {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let Some(command) = cli.command else {
        use clap::CommandFactory;
        let _ = Cli::command().print_help();
        return ExitCode::from(1);
    };
    let globals = match context::Globals::new(cli.chdir, cli.git_dir, &cli.config) {
        Ok(g) => g,
        Err(fatal) => return fatal.exit(),
    };
    match commands::run(command, &globals) {
        Ok(code) => ExitCode::from(code),
        Err(fatal) => fatal.exit(),
    }
}
