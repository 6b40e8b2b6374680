//! `ps-scheduler`: the scheduler of an mxrs job. Settings come from MXNet's environment
//! variables (`DMLC_PS_ROOT_URI`, `DMLC_PS_ROOT_PORT`, `DMLC_NUM_SERVER`, ...) or these flags.
//! With port 0 it binds any free port and writes it, once listening, to `--announce PATH`
//! (`MXRS_ANNOUNCE`). Exits 0 when every worker has finished, 1 when the job failed, 2 on a bad
//! setting.

#![forbid(unsafe_code)]

use clap::Parser;
use ps_core::Role;
use ps_core::cli::Settings;

/// Runs the scheduler of an mxrs parameter-server job.
#[derive(Parser)]
#[command(name = "ps-scheduler", version)]
struct Args {
    #[command(flatten)]
    settings: Settings,
}

fn main() {
    ps_core::node::main(Role::Scheduler, &Args::parse().settings)
}
