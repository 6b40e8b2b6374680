//! Command-line flags shared by the binaries: each names an environment variable of
//! [`Config`](crate::Config), and a flag wins over its variable.

use std::path::PathBuf;

use clap::Args;

use crate::config::Config;
use crate::error::{PsError, Result};

/// The node settings, as flags.
#[derive(Debug, Clone, Default, Args)]
pub struct Settings {
    /// Scheduler address [env: DMLC_PS_ROOT_URI]
    #[arg(long)]
    pub root_uri: Option<String>,
    /// Scheduler port [env: DMLC_PS_ROOT_PORT]
    #[arg(long)]
    pub root_port: Option<String>,
    /// Number of servers [env: DMLC_NUM_SERVER]
    #[arg(long)]
    pub num_servers: Option<String>,
    /// Number of workers [env: DMLC_NUM_WORKER]
    #[arg(long)]
    pub num_workers: Option<String>,
    /// Interface whose address to bind and advertise [env: DMLC_INTERFACE]
    #[arg(long)]
    pub interface: Option<String>,
    /// Address to bind and advertise [env: DMLC_NODE_HOST]
    #[arg(long)]
    pub node_host: Option<String>,
    /// Data-plane port of a server, 0 for any [env: MXRS_PORT]
    #[arg(long)]
    pub port: Option<String>,
    /// 0 quiet, 1 connection events, 2 every message [env: PS_VERBOSE]
    #[arg(long)]
    pub verbose: Option<String>,
    /// Seconds between heartbeats, 0 for none [env: PS_HEARTBEAT_INTERVAL]
    #[arg(long)]
    pub heartbeat_interval: Option<String>,
    /// Seconds of silence before a node is declared lost [env: PS_HEARTBEAT_TIMEOUT]
    #[arg(long)]
    pub heartbeat_timeout: Option<String>,
    /// Arrays above this many elements are sliced over all servers
    /// [env: MXNET_KVSTORE_BIGARRAY_BOUND]
    #[arg(long)]
    pub bigarray_bound: Option<String>,
    /// Largest data-plane frame accepted, in bytes [env: MXRS_MAX_FRAME_BYTES]
    #[arg(long)]
    pub max_frame_bytes: Option<String>,
    /// File holding the job's secret (kept off the command line) [env: MXRS_SECRET]
    #[arg(long)]
    pub secret_file: Option<PathBuf>,
}

impl Settings {
    /// The configuration: flags first, then the environment.
    pub fn config(&self) -> Result<Config> {
        let secret = match &self.secret_file {
            Some(path) => Some(std::fs::read_to_string(path).map_err(|e| PsError::Config {
                var: "MXRS_SECRET",
                reason: format!("cannot read --secret-file {}: {e}", path.display()),
            })?),
            None => None,
        };
        let flag = |name: &str| -> Option<String> {
            let v = match name {
                "DMLC_PS_ROOT_URI" => &self.root_uri,
                "DMLC_PS_ROOT_PORT" => &self.root_port,
                "DMLC_NUM_SERVER" => &self.num_servers,
                "DMLC_NUM_WORKER" => &self.num_workers,
                "DMLC_INTERFACE" => &self.interface,
                "DMLC_NODE_HOST" => &self.node_host,
                "MXRS_PORT" => &self.port,
                "PS_VERBOSE" => &self.verbose,
                "PS_HEARTBEAT_INTERVAL" => &self.heartbeat_interval,
                "PS_HEARTBEAT_TIMEOUT" => &self.heartbeat_timeout,
                "MXNET_KVSTORE_BIGARRAY_BOUND" => &self.bigarray_bound,
                "MXRS_MAX_FRAME_BYTES" => &self.max_frame_bytes,
                "MXRS_SECRET" => &secret,
                _ => &None,
            };
            v.clone()
        };
        Config::from_lookup(|name| flag(name).or_else(|| std::env::var(name).ok()))
    }
}
