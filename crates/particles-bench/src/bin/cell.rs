//! `particles-bench-cell SPEC`: runs one benchmark cell, exactly as
//! `particles-rs benchmark query-latency cell SPEC` does. It exists for this
//! crate's own tests, which cannot build the `particles-rs` binary but must run
//! cells as child processes the way a real run does.
#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    particles_bench::mark_process_start();
    let Some(spec) = std::env::args_os().nth(1) else {
        eprintln!("usage: particles-bench-cell SPEC");
        return ExitCode::from(2);
    };
    match particles_bench::run_cell(spec.as_ref()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            ExitCode::from(1)
        }
    }
}
