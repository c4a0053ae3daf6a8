//! `refstore-crashfs MOUNTPOINT`: mounts the crash-model test filesystem
//! (see the library's docs) and takes commands on standard input, one a
//! line:
//!
//! - `crash`: throw away everything not durable (and remount);
//! - `crash names-kept`: the same, but keep every name (unflushed files come
//!   back empty);
//! - `checkpoint`: make everything durable;
//! - `stats`: print the requests counted so far;
//! - `quit` (or end of input): unmount and exit.

use std::io::BufRead;
use std::process::ExitCode;

use refstore_crashfs::{CrashFs, CrashMode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir] = args.as_slice() else {
        eprintln!("usage: refstore-crashfs MOUNTPOINT   (then: crash | crash names-kept | checkpoint | stats | quit)");
        return ExitCode::from(2);
    };
    let mut fs = match CrashFs::mount(dir) {
        Ok(fs) => fs,
        Err(e) => {
            eprintln!("refstore-crashfs: cannot mount on {dir}: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("refstore-crashfs: mounted on {dir}");
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        match line.trim() {
            "" => {}
            cmd @ ("crash" | "crash names-kept") => match fs.crash_with(if cmd == "crash" {
                CrashMode::Pessimistic
            } else {
                CrashMode::NamesKept
            }) {
                Ok(()) => println!("crashed"),
                Err(e) => {
                    eprintln!("refstore-crashfs: remount after the crash failed: {e}");
                    return ExitCode::FAILURE;
                }
            },
            "checkpoint" => {
                fs.checkpoint();
                println!("checkpointed");
            }
            "stats" => println!("{:?}", fs.stats()),
            "quit" => break,
            other => eprintln!("refstore-crashfs: unknown command {other:?}"),
        }
    }
    match fs.unmount() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("refstore-crashfs: unmount failed: {e}");
            ExitCode::FAILURE
        }
    }
}
