//! `ps-server`: a server of an mxrs job. Settings come from MXNet's environment
//! variables (`DMLC_PS_ROOT_URI`, `DMLC_PS_ROOT_PORT`, `DMLC_NUM_SERVER`, ...) or these flags.
//! Exits 0 when the scheduler ends the job normally, 1 when the job failed, 2 on a bad setting.

use clap::Parser;
use ps_core::cli::Settings;
use ps_core::node;
use ps_core::scheduler::Outcome;

/// Runs a server of an mxrs parameter-server job.
#[derive(Parser)]
#[command(name = "ps-server", version)]
struct Args {
    #[command(flatten)]
    settings: Settings,
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let cfg = match args.settings.config() {
        Ok(cfg) => cfg,
        Err(e) => exit(2, &e.to_string()),
    };
    node::init_logging(cfg.verbose);
    match node::run_server(&cfg).await {
        Ok(Outcome::Completed) => {}
        Ok(Outcome::Failed(why)) => exit(1, &format!("job failed: {why}")),
        Err(e) => exit(2, &e.to_string()),
    }
}

fn exit(code: i32, msg: &str) -> ! {
    eprintln!("ps-server: {msg}");
    std::process::exit(code)
}
