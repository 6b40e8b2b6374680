//! Whole-process entry points: logging, and running a scheduler, a server or a worker's
//! connection to the job from a [`Config`].

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

use tokio::sync::watch;

use crate::config::{Config, Role};
use crate::error::{PsError, Result};
use crate::protocol::frame::Mode;
use crate::protocol::transport;
use crate::protocol::transport::{Credentials, Listeners};
use crate::scheduler::{self, ControlClient, Group, JobHealth, Outcome};
use crate::server::{Copying, Farewell, Limits, ReplicaConfig, Server};
use crate::task::AbortOnDrop;
use crate::worker::{DataPlane, Worker};

/// Writes `line` and a line break on stderr in one write, and goes on when stderr is gone (a
/// launcher that exited, a closed pipe): a node's work never depends on being heard. (One
/// write: a launcher that tags each chunk of a process's output, `mpirun --tag-output`, shows it
/// as one line.)
pub fn say(line: &str) {
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// Sets up logging to stderr: `PS_VERBOSE` 0 shows warnings, 1 connection events, 2 every
/// message; `RUST_LOG` overrides. Colours only on a terminal (a log file or a pipe gets plain
/// text) and never with `NO_COLOR` set. A log line that cannot be written is dropped (by
/// default the subscriber would report that on stderr too, and panic when that fails as well,
/// ending whichever task logged). Safe to call more than once.
pub fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("ps_core={level},warn")));
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .with_target(false)
        .log_internal_errors(false)
        .try_init();
}

/// Runs `role` (scheduler or server) to the end of its job: returns the exit status (0 the job
/// completed, 1 it failed, 2 a bad setting or a start-up error) and, unless 0, the one line
/// that says why.
pub fn run(role: Role, settings: &crate::cli::Settings) -> (i32, Option<String>) {
    let cfg = match settings.config() {
        Ok(cfg) => cfg,
        Err(e) => return (2, Some(e.to_string())),
    };
    init_logging(cfg.verbose);
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return (2, Some(format!("runtime: {e}"))),
    };
    let outcome = rt.block_on(async {
        match role {
            Role::Scheduler => run_scheduler(&cfg).await,
            _ => run_server(&cfg).await,
        }
    });
    match outcome {
        Ok(Outcome::Completed) => (0, None),
        Ok(Outcome::Failed(why)) => (1, Some(format!("job failed: {why}"))),
        Err(e) => (2, Some(e.to_string())),
    }
}

/// The `main` of the `ps-scheduler` and `ps-server` binaries: [`run`], then exit with its status.
pub fn main(role: Role, settings: &crate::cli::Settings) -> ! {
    let (code, why) = run(role, settings);
    if let Some(why) = why {
        say(&format!("ps-{role}: {why}"));
    }
    std::process::exit(code)
}

/// Runs the scheduler of the job `cfg` describes until every worker has finished.
///
/// It binds `DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT`, where port 0 takes any free one. With
/// `MXRS_ANNOUNCE` it then writes the port it got as one line (`PORT\n`) to that path and closes
/// it, before serving: whoever started it learns both the port and that it is listening. Port 0
/// without `MXRS_ANNOUNCE` is refused, since nobody could learn the port.
pub async fn run_scheduler(cfg: &Config) -> Result<Outcome> {
    let root = cfg.root_addr()?;
    // Opened before binding, so that a bad path fails before anything listens.
    let announce = match &cfg.announce {
        Some(path) => Some((path, open_announcement(path)?)),
        None if root.port() == 0 => {
            return Err(PsError::Config {
                var: "DMLC_PS_ROOT_PORT".into(),
                reason: "0 (any free port) needs MXRS_ANNOUNCE (--announce), the path where the \
                         scheduler writes the port it got"
                    .into(),
            });
        }
        None => None,
    };
    let listener = transport::listen(root.ip(), root.port()).await?;
    let bound = listener
        .local_addr()
        .map_err(|e| PsError::io("local address", e))?;
    if let Some((path, file)) = announce {
        announce_port(path, file, bound.port())?;
    }
    tracing::info!("scheduler listening on {bound}");
    scheduler::serve(cfg, listener, std::future::pending()).await
}

/// Opens `MXRS_ANNOUNCE`'s path for writing: a pipe or FIFO as it is, a file created if missing
/// and appended to (never truncated: `/dev/stdout` may be a log file the scheduler shares). A
/// descriptor path such as `/dev/fd/N` is opened anew, so nothing here takes over a raw
/// descriptor.
fn open_announcement(path: &Path) -> Result<File> {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| PsError::Config {
            var: "MXRS_ANNOUNCE".into(),
            reason: format!(
                "cannot open {} to announce the scheduler's port: {e}",
                path.display()
            ),
        })
}

/// Writes `port` as one line to the announcement file and closes it.
fn announce_port(path: &Path, mut file: File, port: u16) -> Result<()> {
    file.write_all(format!("{port}\n").as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| PsError::Config {
            var: "MXRS_ANNOUNCE".into(),
            reason: format!(
                "cannot write the scheduler's port to {}: {e}",
                path.display()
            ),
        })
}

/// Refuses `DMLC_PS_ROOT_PORT=0` for a node that connects to the scheduler: 0 only tells a
/// scheduler to take any free port, which it announces; the others need that port.
fn require_scheduler_port(cfg: &Config) -> Result<()> {
    if cfg.root_port == 0 {
        return Err(PsError::Config {
            var: "DMLC_PS_ROOT_PORT".into(),
            reason: "0 is not the scheduler's port (0 tells only the scheduler itself to take \
                     any free port and announce it)"
                .into(),
        });
    }
    Ok(())
}

/// How long a server keeps opening a broken link to a backup again when heartbeats are off.
const BACKUP_GIVE_UP: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs a server: binds its data port, joins the job, serves until the scheduler ends the job
/// (or is lost).
pub async fn run_server(cfg: &Config) -> Result<Outcome> {
    require_scheduler_port(cfg)?;
    let creds = Credentials::from_config(cfg)?;
    let ip = cfg.node_ip()?;
    // Both listeners before joining: peers connect as soon as the job forms.
    let listeners = Listeners::new(transport::listen(ip, cfg.port).await?, &creds);
    let port = listeners
        .local_addr()
        .map_err(|e| PsError::io("local address", e))?
        .port();
    let control = ControlClient::join(cfg, Role::Server, &ip.to_string(), port).await?;
    tracing::info!("{} serving", control.membership().me);
    let limits = Limits {
        max_frame: cfg.max_frame_bytes,
        max_inflight: cfg.max_inflight_bytes,
    };
    let server = Server::with_limits(cfg.num_workers, limits);
    let m = control.membership();
    if cfg.replicas > 0 && m.num_servers > 1 {
        server.replicate(ReplicaConfig {
            me: m.me.rank,
            servers: scheduler::resolve(&m.servers)?,
            replicas: cfg.replicas,
            bigarray_bound: cfg.bigarray_bound,
            creds: creds.clone(),
            max_frame: cfg.max_frame_bytes,
            num_workers: cfg.num_workers,
            mode: Mode::Sync,
            give_up: match cfg.heartbeat_timeout.is_zero() {
                true => BACKUP_GIVE_UP,
                false => 2 * cfg.heartbeat_timeout,
            },
        });
    }
    let server = Arc::new(server);
    let _endpoint = match cfg.metrics_port {
        Some(port) => {
            let who = format!("server {}", m.me.rank);
            let listener = crate::metrics::bind(ip, port, &who).await?;
            let s = server.clone();
            let render = Arc::new(move || s.metrics_text());
            let serve = crate::metrics::serve(listener, render, std::future::pending());
            Some(AbortOnDrop(tokio::spawn(serve)))
        }
        None => None,
    };
    let ended = follow_job(&server, control.clone());
    let served = server.serve(listeners, creds, ended).await;
    report_server(&server, m.me.rank);
    match served {
        Ok(()) => {}
        // A backup it could not reach: it left so that its keys fail over.
        Err(PsError::NodeLost(why)) => return Ok(Outcome::Failed(why)),
        Err(e) => return Err(e),
    }
    let end = control.health().borrow().clone();
    Ok(match (end.shutdown, end.lost) {
        (Some(s), _) if !s.failed => Outcome::Completed,
        (Some(s), _) => Outcome::Failed(s.reason),
        (None, lost) => Outcome::Failed(lost.unwrap_or_else(|| "the job ended".into())),
    })
}

/// Passes finished workers and the job's topology on to `server` until the job ends, and
/// tells the scheduler when this server has copied ranges to a replacement; then says why the
/// server leaves.
async fn follow_job(server: &Server, control: ControlClient) -> Option<Farewell> {
    let mut health = control.health();
    let mut told = 0;
    let mut applied = 0;
    loop {
        let topology = health.borrow().topology.clone();
        if let Some(t) = topology.filter(|t| t.epoch > applied) {
            applied = t.epoch;
            match server.set_topology(&t) {
                Ok(copies) => copies.into_iter().for_each(|c| report_copy(&control, c)),
                Err(e) => tracing::error!("topology {}: {e}", t.epoch),
            }
        }
        let (finished, farewell) = {
            let h = health.borrow_and_update();
            let farewell = match (&h.shutdown, h.scheduler_lost) {
                (Some(s), _) => Some(Farewell {
                    failed: s.failed,
                    reason: s.reason.clone(),
                }),
                (None, true) => Some(Farewell {
                    failed: true,
                    reason: h
                        .lost
                        .clone()
                        .unwrap_or_else(|| "the scheduler was lost".into()),
                }),
                (None, false) => None,
            };
            (
                h.finished.get(told..).unwrap_or_default().to_vec(),
                farewell,
            )
        };
        told += finished.len();
        for node in finished {
            server.worker_finished(node.rank, &node.to_string());
        }
        if farewell.is_some() {
            return farewell;
        }
        if health.changed().await.is_err() {
            return None;
        }
    }
}

/// With `MXRS_REPORT=1` (set by `mxrs-launch`), says on stderr what the server moved, as the
/// one line the launcher's job summary reads.
fn report_server(server: &Server, rank: u32) {
    if std::env::var("MXRS_REPORT").as_deref() != Ok("1") {
        return;
    }
    let (received, sent) = server.traffic();
    say(&format!(
        "mxrs-report: {{\"role\": \"server\", \"rank\": {rank}, \"bytes_in\": {received}, \
         \"bytes_out\": {sent}}}"
    ));
}

/// Tells the scheduler once the copy `c` to a new backup is stored.
fn report_copy(control: &ControlClient, c: Copying) {
    let control = control.clone();
    tokio::spawn(async move {
        if c.stored.await.is_err() {
            return; // the backup went away; a newer topology says what now
        }
        let ranges = c.ranges.clone();
        match control.synced(c.epoch, c.backup, c.ranges).await {
            Ok(()) => tracing::info!("copied ranges {ranges:?} to server {}", c.backup),
            Err(e) => tracing::warn!("could not report the copy to server {}: {e}", c.backup),
        }
    });
}

/// A worker that joined a job through its scheduler.
pub struct JobWorker {
    worker: Arc<Worker>,
    control: ControlClient,
    watcher: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for JobWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobWorker")
            .field("worker", &self.worker)
            .finish_non_exhaustive()
    }
}

impl JobWorker {
    /// Joins the job `cfg` describes and connects to every server, in `mode`.
    pub async fn join(cfg: &Config, mode: Mode) -> Result<JobWorker> {
        // the data plane's warnings (a server lost, a reply long in coming) reach stderr
        init_logging(cfg.verbose);
        require_scheduler_port(cfg)?;
        let creds = Credentials::from_config(cfg)?;
        let ip = cfg.node_ip()?;
        let control = ControlClient::join(cfg, Role::Worker, &ip.to_string(), 0).await?;
        let m = control.membership().clone();
        let plane = DataPlane {
            servers: scheduler::resolve(&m.servers)?,
            rank: m.me.rank,
            num_workers: m.num_workers,
            mode,
            bigarray_bound: cfg.bigarray_bound,
            max_frame_bytes: cfg.max_frame_bytes,
            creds,
            local: Some(ip),
            rejoined: m.rejoined,
            replicas: cfg.replicas,
            wait_notice: cfg.wait_notice,
        };
        let worker = Arc::new(Worker::connect(plane).await?);
        let watcher = tokio::spawn(watch_health(control.health(), worker.clone()));
        Ok(JobWorker {
            worker,
            control,
            watcher,
        })
    }

    /// The data-plane client.
    pub fn worker(&self) -> &Worker {
        &self.worker
    }

    /// True when this process is a restarted worker that took back a lost one's place.
    pub fn rejoined(&self) -> bool {
        self.control.membership().rejoined
    }

    /// Waits until every worker reached the barrier.
    pub async fn barrier(&self) -> Result<()> {
        self.control.barrier(Group::Workers).await
    }

    /// Waits until every node (workers and servers) reached the barrier.
    pub async fn barrier_all(&self) -> Result<()> {
        self.control.barrier(Group::All).await
    }

    /// Tells the scheduler this worker is done; when all are, the job ends.
    pub async fn finish(&self) -> Result<()> {
        self.control.finish().await
    }
}

impl Drop for JobWorker {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

/// Fails the worker's requests as soon as the job reports a lost node or a failed shutdown;
/// moves them to the backups of a server failed over, and connects to a replacement server.
async fn watch_health(mut health: watch::Receiver<JobHealth>, worker: Arc<Worker>) {
    let why = loop {
        let topology = health.borrow().topology.clone();
        if let Some(t) = topology {
            worker.set_topology(&t).await;
        }
        {
            let h = health.borrow_and_update();
            if let Some(lost) = &h.lost {
                break lost.clone();
            }
            if let Some(s) = &h.shutdown
                && s.failed
            {
                break s.reason.clone();
            }
        }
        if health.changed().await.is_err() {
            return;
        }
    };
    worker.fail(&why);
}
