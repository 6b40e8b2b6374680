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
    /// Scheduler port; for the scheduler, 0 binds any free port and needs --announce
    /// [env: DMLC_PS_ROOT_PORT]
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
    /// Rank of this server, 0..servers-1 (default: one not asked for) [env: DMLC_SERVER_ID]
    #[arg(long, visible_alias = "rank")]
    pub server_id: Option<String>,
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
    /// Most bytes of request frames a server reads at once, over all connections
    /// [env: MXRS_MAX_INFLIGHT_BYTES]
    #[arg(long)]
    pub max_inflight_bytes: Option<String>,
    /// File holding the job's secret (kept off the command line; one trailing newline is
    /// dropped) [env: MXRS_SECRET]
    #[arg(long)]
    pub secret_file: Option<PathBuf>,
    /// This node's TLS certificate, PEM (turns on mutual TLS; with --tls-key and --tls-ca)
    /// [env: MXRS_TLS_CERT]
    #[arg(long, value_name = "PEM")]
    pub tls_cert: Option<String>,
    /// This node's private key, PEM [env: MXRS_TLS_KEY]
    #[arg(long, value_name = "PEM")]
    pub tls_key: Option<String>,
    /// The job's CA certificate, PEM: peers must show a certificate it signed
    /// [env: MXRS_TLS_CA]
    #[arg(long, value_name = "PEM")]
    pub tls_ca: Option<String>,
    /// The DNS name the scheduler's and servers' certificates carry (default: mxrs)
    /// [env: MXRS_TLS_NAME]
    #[arg(long, value_name = "NAME")]
    pub tls_name: Option<String>,
    /// Scheduler: once listening, write its port as one line to this path (a pipe such as
    /// /dev/fd/N or /dev/stdout, a FIFO, or a file, created or appended to) [env: MXRS_ANNOUNCE]
    #[arg(long, value_name = "PATH")]
    pub announce: Option<String>,
    /// Serve Prometheus metrics on http://HOST:PORT/metrics (0: any free port, said on stderr)
    /// [env: MXRS_METRICS_PORT]
    #[arg(long, value_name = "PORT")]
    pub metrics_port: Option<String>,
}

impl Settings {
    /// The configuration: flags first, then the environment.
    pub fn config(&self) -> Result<Config> {
        let secret = match &self.secret_file {
            Some(path) => Some(read_secret_file(path)?),
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
                "MXRS_MAX_INFLIGHT_BYTES" => &self.max_inflight_bytes,
                "DMLC_SERVER_ID" => &self.server_id,
                "MXRS_SECRET" => &secret,
                "MXRS_TLS_CERT" => &self.tls_cert,
                "MXRS_TLS_KEY" => &self.tls_key,
                "MXRS_TLS_CA" => &self.tls_ca,
                "MXRS_TLS_NAME" => &self.tls_name,
                "MXRS_ANNOUNCE" => &self.announce,
                "MXRS_METRICS_PORT" => &self.metrics_port,
                _ => &None,
            };
            v.clone()
        };
        Config::from_lookup(|name| flag(name).or_else(|| std::env::var(name).ok()))
    }
}

/// The secret in `path`, less one trailing newline (`\n` or `\r\n`), so that a file written by
/// `echo "$MXRS_SECRET" > file` holds the same secret as the variable. An empty secret is refused:
/// it would run the job open, which a `--secret-file` never asks for.
fn read_secret_file(path: &std::path::Path) -> Result<String> {
    let refuse = |reason: String| PsError::Config {
        var: "MXRS_SECRET".into(),
        reason,
    };
    let mut secret = std::fs::read_to_string(path)
        .map_err(|e| refuse(format!("cannot read --secret-file {}: {e}", path.display())))?;
    if secret.ends_with("\r\n") {
        secret.truncate(secret.len() - 2);
    } else if secret.ends_with('\n') {
        secret.truncate(secret.len() - 1);
    }
    if secret.is_empty() {
        return Err(refuse(format!("--secret-file {} is empty", path.display())));
    }
    Ok(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The secret read from a `--secret-file` holding `contents`.
    fn secret_from_file(name: &str, contents: &[u8]) -> Result<Option<Vec<u8>>> {
        let path = std::env::temp_dir().join(format!("mxrs-cli-{}-{name}", std::process::id()));
        std::fs::write(&path, contents).unwrap();
        let settings = Settings {
            root_uri: Some("127.0.0.1".into()),
            root_port: Some("9000".into()),
            num_servers: Some("1".into()),
            num_workers: Some("1".into()),
            secret_file: Some(path.clone()),
            ..Default::default()
        };
        let config = settings.config();
        std::fs::remove_file(&path).unwrap();
        config.map(|c| c.secret)
    }

    #[test]
    fn secret_file_loses_one_trailing_newline() {
        // What `echo "$MXRS_SECRET" > file` writes.
        let secret = secret_from_file("lf", b"s3cret\n").unwrap();
        assert_eq!(secret.as_deref(), Some(&b"s3cret"[..]));
        let secret = secret_from_file("crlf", b"s3cret\r\n").unwrap();
        assert_eq!(secret.as_deref(), Some(&b"s3cret"[..]));
    }

    #[test]
    fn secret_file_keeps_everything_but_that_newline() {
        let secret = secret_from_file("two", b"s3cret\n\n").unwrap();
        assert_eq!(secret.as_deref(), Some(&b"s3cret\n"[..]));
        let secret = secret_from_file("bare", b"s3cret").unwrap();
        assert_eq!(secret.as_deref(), Some(&b"s3cret"[..]));
        let secret = secret_from_file("spaces", b" s3cret \n").unwrap();
        assert_eq!(secret.as_deref(), Some(&b" s3cret "[..]));
    }

    #[test]
    fn an_empty_secret_file_is_refused_rather_than_running_open() {
        for (name, contents) in [("empty", &b""[..]), ("newline", &b"\n"[..])] {
            let err = secret_from_file(name, contents).unwrap_err();
            assert!(
                err.to_string().contains("is empty"),
                "{name}: unexpected error {err}"
            );
        }
    }
}
