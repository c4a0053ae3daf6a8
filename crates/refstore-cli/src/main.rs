//! The `refstore` command: git-compatible reference plumbing and a
//! smart-protocol server.
//!
//! Global options (`-C`, `--git-dir`, `-c`) and repository discovery follow
//! git, so refstore can stand in for `git` in scripts that use the commands it
//! implements.

mod commands;

use clap::Parser;
use std::process::ExitCode;

/// Git-compatible reference store and smart-protocol server.
#[derive(Debug, Parser)]
#[command(name = "refstore", version, about, long_about = None)]
struct Cli {
    /// Run as if refstore was started in <path> (may be given several times).
    #[arg(short = 'C', value_name = "path", action = clap::ArgAction::Append, global = false)]
    chdir: Vec<std::path::PathBuf>,
    /// Use <path> as the repository's git directory.
    #[arg(long = "git-dir", value_name = "path")]
    git_dir: Option<std::path::PathBuf>,
    /// Set a configuration value for this invocation (`name=value`).
    #[arg(short = 'c', value_name = "name=value", action = clap::ArgAction::Append)]
    config: Vec<String>,
    #[command(subcommand)]
    command: commands::Command,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = commands::run(cli.command);
    ExitCode::from(code)
}
