//! `ps-server`: a server of an mxrs job. Settings come from MXNet's environment variables
//! (`DMLC_PS_ROOT_URI`, `DMLC_PS_ROOT_PORT`, `DMLC_NUM_SERVER`, ...) or these flags.
//! Exits 0 when the scheduler ends the job normally, 1 when the job failed, 2 on a bad setting.

#![forbid(unsafe_code)]

use clap::Parser;
use ps_core::Role;
use ps_core::cli::Settings;

/// Runs a server of an mxrs parameter-server job.
#[derive(Parser)]
#[command(name = "ps-server", version)]
struct Args {
    #[command(flatten)]
    settings: Settings,
}

fn main() {
    ps_core::node::main(Role::Server, &Args::parse().settings)
}
