//! Running a scheduler or server process from Python: what `import mxrs` does in a process
//! whose `DMLC_ROLE` is `scheduler` or `server`, and the `ps-scheduler` / `ps-server` console
//! scripts.

use clap::Parser;
use ps_core::Role;
use ps_core::cli::Settings;
use ps_core::node::say;
use pyo3::prelude::*;

use crate::errors::KVStoreError;
use crate::{main_thread, python_optimizer};

/// Runs a node (scheduler or server) of an mxrs parameter-server job.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    settings: Settings,
}

fn role_of(name: &str) -> PyResult<Role> {
    match name {
        "scheduler" => Ok(Role::Scheduler),
        "server" => Ok(Role::Server),
        other => Err(KVStoreError::new_err(format!(
            "role '{other}' is neither 'scheduler' nor 'server'"
        ))),
    }
}

/// Runs node `role` with `settings` until the job ends: a server on a thread of its own, while
/// this thread runs the Python optimizers workers send it (`python_optimizer`); returns the
/// exit status and why it failed.
fn run(py: Python<'_>, role: Role, settings: Settings) -> (i32, Option<String>) {
    match role {
        Role::Server => {
            python_optimizer::register();
            main_thread::run_node(py, move || ps_core::node::run(role, &settings))
        }
        _ => py.detach(|| ps_core::node::run(role, &settings)),
    }
}

/// Runs `role` with settings from the environment until the job ends; returns the exit status
/// (0 completed, 1 failed, 2 bad setting) after printing why on stderr.
#[pyfunction]
pub(crate) fn run_role(py: Python<'_>, role: &str) -> PyResult<i32> {
    let role = role_of(role)?;
    let (code, why) = run(py, role, Settings::default());
    if let Some(why) = why {
        say(&format!("mxrs {role}: {why}"));
    }
    Ok(code)
}

/// The `main` of the `ps-scheduler` and `ps-server` console scripts: parses `argv` (the same
/// flags as the Rust binaries), runs the role, returns the exit status.
#[pyfunction]
pub(crate) fn node_main(py: Python<'_>, role: &str, argv: Vec<String>) -> PyResult<i32> {
    let role = role_of(role)?;
    let args = match Args::try_parse_from(&argv) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return Ok(e.exit_code());
        }
    };
    let (code, why) = run(py, role, args.settings);
    if let Some(why) = why {
        say(&format!("ps-{role}: {why}"));
    }
    Ok(code)
}
