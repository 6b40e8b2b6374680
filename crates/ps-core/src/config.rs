//! Settings of a node, read from MXNet's environment variables (or the binaries' flags).
//!
//! Every setting has one name, the environment variable MXNet's launch tools already set; the
//! binaries accept the same settings as flags and feed them through [`Config::from_lookup`], so
//! there is one parser and one set of error messages. A missing or malformed setting is an error
//! that names the variable.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{PsError, Result};
use crate::protocol::tls::TlsFiles;

/// Node role (`DMLC_ROLE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Scheduler,
    Server,
    Worker,
}

impl Role {
    /// Lower-case name as in `DMLC_ROLE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Scheduler => "scheduler",
            Role::Server => "server",
            Role::Worker => "worker",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Default heartbeat period when `PS_HEARTBEAT_INTERVAL` is unset.
pub const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(1);
/// Default silence after which a node is declared lost.
pub const DEFAULT_HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `PS_REJOIN_TIMEOUT`: how long a job waits for a lost worker to be restarted.
pub const DEFAULT_REJOIN_TIMEOUT: Duration = Duration::from_secs(60);
/// Default `MXRS_FORM_TIMEOUT`: how long the scheduler waits for every node to register.
pub const DEFAULT_FORM_TIMEOUT: Duration = Duration::from_secs(300);
/// Default `MXRS_WAIT_NOTICE`: how long a worker's request waits for its reply on an open
/// connection before the worker says so on stderr.
pub const DEFAULT_WAIT_NOTICE: Duration = Duration::from_secs(60);
/// Default `MXNET_KVSTORE_BIGARRAY_BOUND`: arrays above it are sliced over all servers.
pub const DEFAULT_BIGARRAY_BOUND: u64 = 1_000_000;
/// Default cap on one data-plane frame (never more than the in-flight budget).
pub const DEFAULT_MAX_FRAME_BYTES: u64 = 1 << 31;
/// Default cap on the bytes of request frames a server reads at once over all connections.
pub const DEFAULT_MAX_INFLIGHT_BYTES: u64 = 1 << 31;

/// All settings of one node.
#[derive(Clone)]
pub struct Config {
    /// `DMLC_ROLE`; the binaries know their own role, so it may be absent for them.
    pub role: Option<Role>,
    /// `DMLC_PS_ROOT_URI`: host of the scheduler.
    pub root_uri: String,
    /// `DMLC_PS_ROOT_PORT`: gRPC port of the scheduler; for the scheduler itself 0 binds any
    /// free port, which it then announces through `MXRS_ANNOUNCE`.
    pub root_port: u16,
    /// `DMLC_NUM_SERVER`.
    pub num_servers: u32,
    /// `DMLC_NUM_WORKER`.
    pub num_workers: u32,
    /// `DMLC_INTERFACE`: network interface whose address this node binds and advertises.
    pub interface: Option<String>,
    /// `DMLC_NODE_HOST`: address (or host name) this node binds and advertises.
    pub node_host: Option<String>,
    /// `DMLC_WORKER_ID`: fixes a worker's rank.
    pub worker_id: Option<u32>,
    /// `DMLC_SERVER_ID`: fixes a server's rank.
    pub server_id: Option<u32>,
    /// `MXRS_PORT`: data-plane port of a server (0 picks a free one).
    pub port: u16,
    /// `PS_VERBOSE`: 0 quiet, 1 connection events, 2 every message.
    pub verbose: u8,
    /// `PS_HEARTBEAT_INTERVAL` (seconds; 0 turns heartbeats off).
    pub heartbeat_interval: Duration,
    /// `PS_HEARTBEAT_TIMEOUT` (seconds).
    pub heartbeat_timeout: Duration,
    /// How long the scheduler waits for a lost worker to come back under the same rank before
    /// the job fails: `PS_REJOIN_TIMEOUT` seconds (default 60) when `MXRS_MAX_RESTARTS` is above
    /// 0 (the launcher restarts failed workers), else `None`: a lost worker ends the job at once.
    pub rejoin_timeout: Option<Duration>,
    /// How long the scheduler waits, from its start, for every node of the job to register
    /// before it gives up naming the missing ones: `MXRS_FORM_TIMEOUT` seconds (default 300;
    /// 0: wait for ever).
    pub form_timeout: Option<Duration>,
    /// How long a worker's request may wait for its reply on an open connection before the
    /// worker names it on stderr (and again each time the wait doubles): `MXRS_WAIT_NOTICE`
    /// seconds (default 60; 0: never). A synchronous round waits for the slowest worker, so a
    /// long wait is not an error, but it is never a silent one.
    pub wait_notice: Option<Duration>,
    /// `MXRS_REPLICAS`: backups of each server's keys on the servers after it (0: none; at
    /// most S - 1 count). Default 1 with two servers or more, else 0.
    pub replicas: u32,
    /// `MXNET_KVSTORE_BIGARRAY_BOUND` (elements).
    pub bigarray_bound: u64,
    /// `MXRS_MAX_FRAME_BYTES`: larger data-plane frames are refused.
    pub max_frame_bytes: u64,
    /// `MXRS_MAX_INFLIGHT_BYTES`: most bytes of request frames a server reads at once.
    pub max_inflight_bytes: u64,
    /// `MXRS_SECRET`: the job's shared secret.
    pub secret: Option<Vec<u8>>,
    /// `MXRS_TLS_CERT`, `MXRS_TLS_KEY`, `MXRS_TLS_CA`: mutual TLS on every connection (all
    /// three or none); `MXRS_TLS_NAME`: the name accepting nodes' certificates carry.
    pub tls: Option<TlsFiles>,
    /// `MXRS_ANNOUNCE`: where the scheduler writes the port it listens on, as one line, once it
    /// is bound (a pipe such as `/dev/fd/N` or `/dev/stdout`, a FIFO, or a file, appended to).
    pub announce: Option<PathBuf>,
    /// `MXRS_METRICS_PORT`: where the scheduler or a server serves Prometheus metrics on
    /// `/metrics` (0: any free port, said on stderr); unset: no endpoint.
    pub metrics_port: Option<u16>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("role", &self.role)
            .field(
                "root",
                &format_args!("{}:{}", self.root_uri, self.root_port),
            )
            .field("num_servers", &self.num_servers)
            .field("num_workers", &self.num_workers)
            .field("interface", &self.interface)
            .field("node_host", &self.node_host)
            .field("worker_id", &self.worker_id)
            .field("server_id", &self.server_id)
            .field("port", &self.port)
            .field("heartbeat_interval", &self.heartbeat_interval)
            .field("heartbeat_timeout", &self.heartbeat_timeout)
            .field("rejoin_timeout", &self.rejoin_timeout)
            .field("form_timeout", &self.form_timeout)
            .field("wait_notice", &self.wait_notice)
            .field("replicas", &self.replicas)
            .field("bigarray_bound", &self.bigarray_bound)
            .field("max_frame_bytes", &self.max_frame_bytes)
            .field("max_inflight_bytes", &self.max_inflight_bytes)
            .field("secret", &self.secret.as_ref().map(|_| "<set>"))
            .field("tls", &self.tls.as_ref().map(|_| "<set>"))
            .field("announce", &self.announce)
            .field("metrics_port", &self.metrics_port)
            .finish()
    }
}

/// Names of every variable [`Config`] reads, for documentation and for the binaries' flags.
pub const VARIABLES: &[&str] = &[
    "DMLC_ROLE",
    "DMLC_PS_ROOT_URI",
    "DMLC_PS_ROOT_PORT",
    "DMLC_NUM_SERVER",
    "DMLC_NUM_WORKER",
    "DMLC_INTERFACE",
    "DMLC_NODE_HOST",
    "DMLC_WORKER_ID",
    "DMLC_SERVER_ID",
    "MXRS_PORT",
    "PS_VERBOSE",
    "PS_HEARTBEAT_INTERVAL",
    "PS_HEARTBEAT_TIMEOUT",
    "MXRS_MAX_RESTARTS",
    "PS_REJOIN_TIMEOUT",
    "MXRS_FORM_TIMEOUT",
    "MXRS_WAIT_NOTICE",
    "MXRS_REPLICAS",
    "MXNET_KVSTORE_BIGARRAY_BOUND",
    "MXRS_MAX_FRAME_BYTES",
    "MXRS_MAX_INFLIGHT_BYTES",
    "MXRS_SECRET",
    "MXRS_TLS_CERT",
    "MXRS_TLS_KEY",
    "MXRS_TLS_CA",
    "MXRS_TLS_NAME",
    "MXRS_ANNOUNCE",
    "MXRS_METRICS_PORT",
];

impl Config {
    /// Reads the settings from the process environment.
    pub fn from_env() -> Result<Config> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the settings through `lookup`, which maps a variable name to its value.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let role = get("DMLC_ROLE").map(|v| parse_role(v.trim())).transpose()?;
        let root_uri = get("DMLC_PS_ROOT_URI").ok_or(PsError::Config {
            var: "DMLC_PS_ROOT_URI".into(),
            reason: "not set (address of the scheduler)".into(),
        })?;
        let secret = lookup("MXRS_SECRET")
            .filter(|s| !s.is_empty())
            .map(String::into_bytes);
        let max_inflight_bytes = positive(
            optional(&get, "MXRS_MAX_INFLIGHT_BYTES")?.unwrap_or(DEFAULT_MAX_INFLIGHT_BYTES),
            "MXRS_MAX_INFLIGHT_BYTES",
        )?;
        let root_port = required(&get, "DMLC_PS_ROOT_PORT")?;
        let num_servers = positive(required(&get, "DMLC_NUM_SERVER")?, "DMLC_NUM_SERVER")?;
        let max_frame_bytes = match optional(&get, "MXRS_MAX_FRAME_BYTES")? {
            None => DEFAULT_MAX_FRAME_BYTES.min(max_inflight_bytes),
            Some(n) if n > max_inflight_bytes => {
                return Err(PsError::Config {
                    var: "MXRS_MAX_FRAME_BYTES".into(),
                    reason: format!(
                        "{n} is above MXRS_MAX_INFLIGHT_BYTES ({max_inflight_bytes}): a server \
                         could never read such a frame"
                    ),
                });
            }
            Some(n) => positive(n, "MXRS_MAX_FRAME_BYTES")?,
        };
        Ok(Config {
            role,
            root_uri: root_uri.trim().to_string(),
            root_port,
            num_servers,
            num_workers: positive(required(&get, "DMLC_NUM_WORKER")?, "DMLC_NUM_WORKER")?,
            interface: get("DMLC_INTERFACE").map(|s| s.trim().to_string()),
            node_host: get("DMLC_NODE_HOST").map(|s| s.trim().to_string()),
            worker_id: optional(&get, "DMLC_WORKER_ID")?,
            server_id: optional(&get, "DMLC_SERVER_ID")?,
            port: optional(&get, "MXRS_PORT")?.unwrap_or(0),
            verbose: optional::<u8>(&get, "PS_VERBOSE")?.unwrap_or(0).min(2),
            heartbeat_interval: seconds(&get, "PS_HEARTBEAT_INTERVAL")?
                .unwrap_or(DEFAULT_HEARTBEAT_INTERVAL),
            heartbeat_timeout: seconds(&get, "PS_HEARTBEAT_TIMEOUT")?
                .unwrap_or(DEFAULT_HEARTBEAT_TIMEOUT),
            rejoin_timeout: match optional::<u32>(&get, "MXRS_MAX_RESTARTS")? {
                Some(n) if n > 0 => {
                    Some(seconds(&get, "PS_REJOIN_TIMEOUT")?.unwrap_or(DEFAULT_REJOIN_TIMEOUT))
                }
                _ => None,
            },
            form_timeout: match seconds(&get, "MXRS_FORM_TIMEOUT")? {
                Some(t) if t.is_zero() => None,
                Some(t) => Some(t),
                None => Some(DEFAULT_FORM_TIMEOUT),
            },
            wait_notice: match seconds(&get, "MXRS_WAIT_NOTICE")? {
                Some(t) if t.is_zero() => None,
                Some(t) => Some(t),
                None => Some(DEFAULT_WAIT_NOTICE),
            },
            replicas: match optional(&get, "MXRS_REPLICAS")? {
                Some(n) if n > 1 => {
                    return Err(PsError::Config {
                        var: "MXRS_REPLICAS".into(),
                        reason: format!(
                            "{n}: mxrs keeps one backup of each server's keys (1) or none (0)"
                        ),
                    });
                }
                Some(n) => n,
                None if num_servers >= 2 => 1,
                None => 0,
            },
            bigarray_bound: positive(
                optional(&get, "MXNET_KVSTORE_BIGARRAY_BOUND")?.unwrap_or(DEFAULT_BIGARRAY_BOUND),
                "MXNET_KVSTORE_BIGARRAY_BOUND",
            )?,
            max_frame_bytes,
            max_inflight_bytes,
            secret,
            tls: tls_files(&get)?,
            announce: get("MXRS_ANNOUNCE").map(PathBuf::from),
            metrics_port: optional(&get, "MXRS_METRICS_PORT")?,
        })
    }

    /// Settings for an in-process job on 127.0.0.1 (tests and benchmarks).
    pub fn local(root_port: u16, num_servers: u32, num_workers: u32) -> Config {
        Config {
            role: None,
            root_uri: "127.0.0.1".into(),
            root_port,
            num_servers,
            num_workers,
            interface: None,
            node_host: Some("127.0.0.1".into()),
            worker_id: None,
            server_id: None,
            port: 0,
            verbose: 0,
            heartbeat_interval: DEFAULT_HEARTBEAT_INTERVAL,
            heartbeat_timeout: DEFAULT_HEARTBEAT_TIMEOUT,
            rejoin_timeout: None,
            form_timeout: Some(DEFAULT_FORM_TIMEOUT),
            wait_notice: Some(DEFAULT_WAIT_NOTICE),
            replicas: 0,
            bigarray_bound: DEFAULT_BIGARRAY_BOUND,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            max_inflight_bytes: DEFAULT_MAX_INFLIGHT_BYTES,
            secret: None,
            tls: None,
            announce: None,
            metrics_port: None,
        }
    }

    /// The scheduler's address, resolved.
    pub fn root_addr(&self) -> Result<SocketAddr> {
        resolve(&self.root_uri, self.root_port, "DMLC_PS_ROOT_URI")
    }

    /// The address this node binds and advertises: `DMLC_NODE_HOST`, else the address of
    /// `DMLC_INTERFACE`, else the local address of the route to the scheduler.
    pub fn node_ip(&self) -> Result<IpAddr> {
        if let Some(host) = &self.node_host {
            return Ok(resolve(host, 0, "DMLC_NODE_HOST")?.ip());
        }
        if let Some(name) = &self.interface {
            return interface_ip(name);
        }
        let root = self.root_addr()?;
        let probe = UdpSocket::bind(match root {
            SocketAddr::V4(_) => "0.0.0.0:0",
            SocketAddr::V6(_) => "[::]:0",
        })
        .and_then(|s| s.connect(root).map(|_| s))
        .and_then(|s| s.local_addr())
        .map_err(|e| PsError::Config {
            var: "DMLC_PS_ROOT_URI".into(),
            reason: format!("no route to the scheduler at {root}: {e}"),
        })?;
        Ok(probe.ip())
    }
}

/// The TLS settings: all three of `MXRS_TLS_CERT`, `MXRS_TLS_KEY` and `MXRS_TLS_CA`, or none.
fn tls_files(get: &impl Fn(&str) -> Option<String>) -> Result<Option<TlsFiles>> {
    const VARS: [&str; 3] = ["MXRS_TLS_CERT", "MXRS_TLS_KEY", "MXRS_TLS_CA"];
    let [cert, key, ca] = VARS.map(|v| get(v).map(|s| s.trim().to_string()));
    let name = get("MXRS_TLS_NAME").map(|s| s.trim().to_string());
    match (cert, key, ca) {
        (None, None, None) if name.is_some() => Err(PsError::Config {
            var: "MXRS_TLS_NAME".into(),
            reason: "set without MXRS_TLS_CERT, MXRS_TLS_KEY and MXRS_TLS_CA, which turn TLS on"
                .into(),
        }),
        (None, None, None) => Ok(None),
        (Some(cert), Some(key), Some(ca)) => Ok(Some(TlsFiles {
            cert,
            key,
            ca,
            name,
        })),
        given => {
            let present = [given.0.is_some(), given.1.is_some(), given.2.is_some()];
            let missing: Vec<&str> = VARS
                .iter()
                .zip(present)
                .filter(|(_, p)| !p)
                .map(|(v, _)| *v)
                .collect();
            Err(PsError::Config {
                var: missing[0].into(),
                reason: format!(
                    "not set, while other TLS settings are: TLS needs {} as well",
                    missing.join(" and ")
                ),
            })
        }
    }
}

fn parse_role(v: &str) -> Result<Role> {
    match v.to_ascii_lowercase().as_str() {
        "scheduler" => Ok(Role::Scheduler),
        "server" => Ok(Role::Server),
        "worker" => Ok(Role::Worker),
        other => Err(PsError::Config {
            var: "DMLC_ROLE".into(),
            reason: format!("'{other}' is not one of scheduler, server, worker"),
        }),
    }
}

fn optional<T: std::str::FromStr>(
    get: &impl Fn(&str) -> Option<String>,
    var: &'static str,
) -> Result<Option<T>>
where
    T::Err: std::fmt::Display,
{
    get(var)
        .map(|v| {
            v.trim().parse::<T>().map_err(|e| PsError::Config {
                var: var.into(),
                reason: format!("'{v}' is not a valid {}: {e}", type_word::<T>()),
            })
        })
        .transpose()
}

fn required<T: std::str::FromStr>(
    get: &impl Fn(&str) -> Option<String>,
    var: &'static str,
) -> Result<T>
where
    T::Err: std::fmt::Display,
{
    optional(get, var)?.ok_or(PsError::Config {
        var: var.into(),
        reason: "not set".into(),
    })
}

fn positive<T: PartialOrd + Default>(v: T, var: &'static str) -> Result<T> {
    if v > T::default() {
        Ok(v)
    } else {
        Err(PsError::Config {
            var: var.into(),
            reason: "must be at least 1".into(),
        })
    }
}

fn seconds(get: &impl Fn(&str) -> Option<String>, var: &'static str) -> Result<Option<Duration>> {
    let Some(secs) = optional::<f64>(get, var)? else {
        return Ok(None);
    };
    Duration::try_from_secs_f64(secs)
        .map(Some)
        .map_err(|_| PsError::Config {
            var: var.into(),
            reason: format!("'{secs}' is not a non-negative number of seconds"),
        })
}

fn type_word<T>() -> &'static str {
    let name = std::any::type_name::<T>();
    if name.starts_with('u') {
        "non-negative integer"
    } else if name.starts_with('f') {
        "number"
    } else {
        "value"
    }
}

fn resolve(host: &str, port: u16, var: &'static str) -> Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| PsError::Config {
            var: var.into(),
            reason: format!("cannot resolve host '{host}'"),
        })
}

fn interface_ip(name: &str) -> Result<IpAddr> {
    let ifaces = if_addrs::get_if_addrs().map_err(|e| PsError::Config {
        var: "DMLC_INTERFACE".into(),
        reason: format!("cannot list network interfaces: {e}"),
    })?;
    let mut addrs: Vec<IpAddr> = ifaces
        .iter()
        .filter(|i| i.name == name)
        .map(|i| i.ip())
        .collect();
    addrs.sort_by_key(|ip| ip.is_ipv6());
    addrs.first().copied().ok_or_else(|| PsError::Config {
        var: "DMLC_INTERFACE".into(),
        reason: format!(
            "no interface named '{name}' with an address (have: {})",
            ifaces
                .iter()
                .map(|i| i.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

#[cfg(test)]
mod tests;
