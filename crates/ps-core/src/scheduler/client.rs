//! The node side of the control plane: [`ControlClient`].
//!
//! Joining registers the node and waits for the job to form. From then on two background tasks
//! keep the node's view of the job current: one heart-beats (and reads the lost nodes from each
//! reply), one reads the scheduler's event stream. Both publish into [`JobHealth`] and end with
//! the last clone of the client, or once the shutdown order has arrived.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};
use tonic::transport::Channel;
use tonic::{Code, Streaming};

use super::{Group, JobHealth, Membership, NodeInfo, Shutdown, Topology};
use crate::config::{Config, Role};
use crate::error::{PsError, Result};
use crate::protocol::pb::scheduler_client::SchedulerClient;
use crate::protocol::transport::Credentials;
use crate::protocol::{pb, transport};

/// How long [`ControlClient::join`] keeps trying to reach a scheduler that is not up yet.
const JOIN_PATIENCE: Duration = Duration::from_secs(60);
/// Longest pause between two tries.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(1);
/// How often a node waiting for the job to form says so.
const REPORT_EVERY: Duration = Duration::from_secs(30);
/// How long past the formation timeout a node waits for the scheduler's verdict.
const FORM_GRACE: Duration = Duration::from_secs(60);

/// A node's connection to the scheduler. Cheap to clone; the background tasks end when the last
/// clone is dropped.
#[derive(Clone)]
pub struct ControlClient {
    inner: Arc<Inner>,
}

struct Inner {
    membership: Membership,
    rpc: SchedulerClient<Channel>,
    watch: Arc<Watch>,
    /// Dropped with the last clone; the background tasks watch for that.
    _stop: watch::Sender<()>,
}

/// What the background tasks publish.
struct Watch {
    /// `scheduler on HOST:PORT`, for messages.
    scheduler: String,
    health: watch::Sender<JobHealth>,
    /// Set when the scheduler itself is lost; pending barriers fail on it.
    scheduler_lost: watch::Sender<Option<String>>,
}

impl Watch {
    /// Records a lost node; only the first one counts.
    fn lost(&self, message: String) {
        self.health.send_if_modified(|h| {
            let first = h.lost.is_none();
            if first {
                tracing::error!("{message}");
                h.lost = Some(message);
            }
            first
        });
    }

    /// The scheduler stopped answering; meaningless once the job is over.
    fn scheduler_lost(&self, why: &str) {
        if self.health.borrow().shutdown.is_some() {
            return;
        }
        let message = format!("{} {why}", self.scheduler);
        self.scheduler_lost.send_replace(Some(message.clone()));
        self.lost(message);
        self.health
            .send_if_modified(|h| !std::mem::replace(&mut h.scheduler_lost, true));
    }

    /// Records a finished worker (once).
    fn finished(&self, node: NodeInfo) {
        self.health.send_if_modified(|h| {
            let new = !h.finished.iter().any(|n| n.node_id == node.node_id);
            if new {
                h.finished.push(node);
            }
            new
        });
    }

    fn shutdown(&self, order: Shutdown) {
        tracing::info!("the scheduler ended the job: {}", order.reason);
        self.health.send_modify(|h| h.shutdown = Some(order));
    }

    fn is_over(&self) -> bool {
        self.health.borrow().shutdown.is_some()
    }
}

impl std::fmt::Debug for ControlClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlClient")
            .field("me", &self.inner.membership.me)
            .field("scheduler", &self.inner.watch.scheduler)
            .finish()
    }
}

impl ControlClient {
    /// Connects to the scheduler at `cfg.root_addr()` (retrying while it is not up yet, for up
    /// to 60 s: launch order is arbitrary), registers with `role`, advertised `host` and
    /// data-plane `port` (0 for workers) and the rank it asks for (`cfg.worker_id` or
    /// `cfg.server_id`), waits until the whole job has
    /// registered, then starts heart-beating and watching events.
    ///
    /// # Errors
    /// [`PsError::Auth`] when this node's `MXRS_SECRET` differs from the scheduler's;
    /// [`PsError::Rejected`] when the scheduler refuses the registration (the message says
    /// which setting is wrong); [`PsError::Rpc`] when the scheduler cannot be reached;
    /// [`PsError::Shutdown`] when the scheduler stops before the job forms.
    pub async fn join(cfg: &Config, role: Role, host: &str, port: u16) -> Result<ControlClient> {
        let creds = Credentials::from_config(cfg)?;
        let addr = cfg.root_addr()?;
        let scheduler = NodeInfo {
            node_id: 0,
            role: Role::Scheduler,
            rank: 0,
            host: cfg.root_uri.clone(),
            port: cfg.root_port,
        }
        .to_string();
        let mut rpc = SchedulerClient::new(connect(addr, creds).await?);
        let request = pb::RegisterRequest {
            role: pb::Role::from(role).into(),
            host: host.to_string(),
            port: port.into(),
            worker_id: cfg.worker_id.filter(|_| role == Role::Worker),
            server_id: cfg.server_id.filter(|_| role == Role::Server),
            num_workers: cfg.num_workers,
            num_servers: cfg.num_servers,
        };
        tracing::debug!("registering as {role} with the {scheduler}");
        let reply = await_formation(rpc.register(request), &scheduler, cfg.form_timeout)
            .await?
            .into_inner();
        let membership = membership(reply)?;
        tracing::info!("joined the job as {}", membership.me);
        let node_id = membership.me.node_id;
        // Subscribe before returning, so that from now on the scheduler notices if we vanish.
        let events = rpc
            .events(pb::EventsRequest { node_id })
            .await?
            .into_inner();

        let watch = Arc::new(Watch {
            scheduler,
            health: watch::channel(JobHealth::default()).0,
            scheduler_lost: watch::channel(None).0,
        });
        let (stop, stopped) = watch::channel(());
        tokio::spawn(read_events(events, watch.clone(), stopped.clone()));
        if !cfg.heartbeat_interval.is_zero() {
            let beat = Heartbeat {
                rpc: rpc.clone(),
                node_id,
                interval: cfg.heartbeat_interval,
                timeout: cfg.heartbeat_timeout,
            };
            tokio::spawn(beat.run(watch.clone(), stopped));
        }
        Ok(ControlClient {
            inner: Arc::new(Inner {
                membership,
                rpc,
                watch,
                _stop: stop,
            }),
        })
    }

    /// This node, its rank, and the server table.
    pub fn membership(&self) -> &Membership {
        &self.inner.membership
    }

    /// Watches the job's health: the first lost node, and the shutdown order.
    pub fn health(&self) -> watch::Receiver<JobHealth> {
        self.inner.watch.health.subscribe()
    }

    /// Blocks until every member of `group` has entered the barrier; fails at once with
    /// [`PsError::NodeLost`] (message naming the node) if a member is or becomes lost, and with
    /// [`PsError::Rejected`] if a worker of the group has already finished.
    pub async fn barrier(&self, group: Group) -> Result<()> {
        let mut scheduler_lost = self.inner.watch.scheduler_lost.subscribe();
        if let Some(message) = scheduler_lost.borrow().clone() {
            return Err(PsError::NodeLost(message));
        }
        let request = pb::BarrierRequest {
            node_id: self.inner.membership.me.node_id,
            group: pb::Group::from(group).into(),
        };
        let mut rpc = self.inner.rpc.clone();
        tokio::select! {
            released = rpc.barrier(request) => match released {
                Ok(_) => Ok(()),
                // The connection broke: the scheduler is gone (the event reader will agree).
                Err(status) if matches!(status.code(), Code::Unavailable | Code::Unknown) => {
                    self.inner.watch.scheduler_lost(&format!("disconnected: {}", status.message()));
                    let message = self.inner.watch.scheduler_lost.borrow().clone();
                    Err(message.map_or_else(|| status.into(), PsError::NodeLost))
                }
                Err(status) => Err(status.into()),
            },
            lost = scheduler_lost.wait_for(Option::is_some) => {
                let message = lost.ok().and_then(|m| m.clone());
                Err(PsError::NodeLost(message.unwrap_or_else(|| "the scheduler was lost".into())))
            }
        }
    }

    /// Tells the scheduler that this server, a primary, has copied every key of `ranges` to
    /// server `backup` under topology `epoch` (servers only).
    pub async fn synced(&self, epoch: u64, backup: u32, ranges: Vec<u32>) -> Result<()> {
        let request = pb::SyncedRequest {
            node_id: self.inner.membership.me.node_id,
            epoch,
            backup,
            ranges,
        };
        self.inner.rpc.clone().synced(request).await?;
        Ok(())
    }

    /// This worker is done (workers only). Returns once the scheduler recorded it; fails with
    /// [`PsError::NodeLost`] naming the scheduler when it cannot be reached.
    pub async fn finish(&self) -> Result<()> {
        let me = &self.inner.membership.me;
        if me.role != Role::Worker {
            return Err(PsError::Rejected(format!(
                "only workers finish; this node is {me}"
            )));
        }
        let request = pb::FinishRequest {
            node_id: me.node_id,
        };
        match self.inner.rpc.clone().finish(request).await {
            Ok(_) => Ok(()),
            // The connection broke (or the call was cut with it): the scheduler is gone, and the
            // job with it.
            Err(status)
                if matches!(
                    status.code(),
                    Code::Unavailable | Code::Unknown | Code::Cancelled
                ) =>
            {
                self.inner
                    .watch
                    .scheduler_lost(&format!("disconnected: {}", status.message()));
                let message = self.inner.watch.scheduler_lost.borrow().clone();
                Err(message.map_or_else(|| status.into(), PsError::NodeLost))
            }
            Err(status) => Err(status.into()),
        }
    }
}

/// Opens the channel to the scheduler, retrying for [`JOIN_PATIENCE`] while it is not up.
async fn connect(addr: std::net::SocketAddr, creds: Credentials) -> Result<Channel> {
    let deadline = Instant::now() + JOIN_PATIENCE;
    let mut delay = Duration::from_millis(50);
    loop {
        match transport::grpc_channel(addr, creds.clone()).await {
            Ok(channel) => return Ok(channel),
            Err(PsError::Rpc(why)) if Instant::now() + delay < deadline => {
                tracing::debug!("{why}; trying again in {delay:?}");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(MAX_RETRY_DELAY);
            }
            Err(PsError::Rpc(why)) => {
                return Err(PsError::Rpc(format!(
                    "{why} (gave up after {JOIN_PATIENCE:?})"
                )));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Waits for the scheduler's answer to a registration (it comes once the job forms), saying
/// every [`REPORT_EVERY`] that it still waits; gives up a minute after the formation timeout
/// (the scheduler answers at the timeout with the missing nodes; past that it is not
/// answering at all).
async fn await_formation<T>(
    answer: impl Future<Output = std::result::Result<T, tonic::Status>>,
    scheduler: &str,
    timeout: Option<Duration>,
) -> Result<T> {
    let start = Instant::now();
    let deadline = timeout.map(|t| start + t + FORM_GRACE);
    let mut report = tokio::time::interval_at(start + REPORT_EVERY, REPORT_EVERY);
    tokio::pin!(answer);
    loop {
        let expired = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            reply = &mut answer => return Ok(reply?),
            _ = report.tick() => tracing::warn!(
                "waited {}s for the job to form (the {scheduler} says which nodes it lacks)",
                start.elapsed().as_secs()
            ),
            _ = expired => {
                return Err(PsError::NodeLost(format!(
                    "the {scheduler} did not answer this node's registration within {:?}",
                    deadline.map(|at| at - start).unwrap_or_default()
                )));
            }
        }
    }
}

/// Checks and converts the scheduler's answer to a registration.
fn membership(reply: pb::RegisterReply) -> Result<Membership> {
    let me = reply.me.ok_or_else(|| {
        PsError::Protocol("the scheduler's registration reply lacks the node".into())
    })?;
    let servers = reply
        .servers
        .into_iter()
        .map(NodeInfo::try_from)
        .collect::<Result<Vec<_>>>()?;
    let ranked = servers
        .iter()
        .enumerate()
        .all(|(r, s)| s.role == Role::Server && s.rank == r as u32);
    if servers.len() != reply.num_servers as usize || !ranked {
        return Err(PsError::Protocol(format!(
            "the scheduler's server table has {} entries out of rank order or count {}",
            servers.len(),
            reply.num_servers
        )));
    }
    Ok(Membership {
        me: me.try_into()?,
        num_workers: reply.num_workers,
        num_servers: reply.num_servers,
        servers,
        rejoined: reply.rejoined,
    })
}

/// Reads the event stream until the shutdown order, the scheduler's loss, or the client's end.
async fn read_events(
    mut events: Streaming<pb::Event>,
    watch: Arc<Watch>,
    mut stopped: watch::Receiver<()>,
) {
    loop {
        let next = tokio::select! {
            next = events.message() => next,
            _ = stopped.changed() => return,
        };
        match next {
            Ok(Some(event)) => match event.kind {
                Some(pb::event::Kind::NodeLost(node)) => {
                    let message = match (event.message, NodeInfo::try_from(node)) {
                        (m, _) if !m.is_empty() => m,
                        (_, Ok(node)) => format!("{node} (node {}) was lost", node.node_id),
                        (_, Err(_)) => "a node was lost".into(),
                    };
                    watch.lost(message);
                }
                Some(pb::event::Kind::WorkerFinished(node)) => {
                    if let Ok(node) = NodeInfo::try_from(node) {
                        watch.finished(node);
                    }
                }
                Some(pb::event::Kind::WorkerAway(_)) => {
                    // The job waits for its restart; nothing here fails because of it.
                    tracing::warn!("{}", event.message);
                }
                Some(pb::event::Kind::ServerFailover(_)) => tracing::warn!("{}", event.message),
                Some(pb::event::Kind::Topology(t)) => match Topology::try_from(t) {
                    Ok(t) => {
                        watch.health.send_if_modified(|h| {
                            let newer = h.topology.as_ref().is_none_or(|o| o.epoch < t.epoch);
                            if newer {
                                h.topology = Some(Arc::new(t));
                            }
                            newer
                        });
                    }
                    Err(e) => tracing::error!("the scheduler sent a bad topology: {e}"),
                },
                Some(pb::event::Kind::WorkerRejoined(node)) => {
                    if let Ok(node) = NodeInfo::try_from(node) {
                        tracing::warn!("{node} (node {}) rejoined the job", node.node_id);
                    }
                }
                Some(pb::event::Kind::Shutdown(order)) => {
                    watch.shutdown(order.into());
                    return;
                }
                None => {}
            },
            Ok(None) => {
                watch.scheduler_lost("closed the event stream before ordering a shutdown");
                return;
            }
            Err(status) => {
                watch.scheduler_lost(&format!("disconnected: {}", status.message()));
                return;
            }
        }
    }
}

/// The heart-beating task of one node.
struct Heartbeat {
    rpc: SchedulerClient<Channel>,
    node_id: u32,
    interval: Duration,
    /// After this long without an answer the scheduler counts as lost (zero: never).
    timeout: Duration,
}

impl Heartbeat {
    async fn run(mut self, watch: Arc<Watch>, mut stopped: watch::Receiver<()>) {
        let start = Instant::now() + self.interval;
        let mut tick = tokio::time::interval_at(start, self.interval);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let per_call = match self.timeout.is_zero() {
            true => self.interval * 10,
            false => self.timeout,
        };
        let mut answered_at = Instant::now();
        let mut last_error = String::new();
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stopped.changed() => return,
            }
            if watch.is_over() {
                return;
            }
            let request = pb::HeartbeatRequest {
                node_id: self.node_id,
            };
            let call = tokio::time::timeout(per_call, self.rpc.heartbeat(request));
            let answer = tokio::select! {
                answer = call => answer,
                _ = stopped.changed() => return,
            };
            match answer {
                Ok(Ok(reply)) => {
                    answered_at = Instant::now();
                    let reply = reply.into_inner();
                    if !reply.first_lost.is_empty() {
                        watch.lost(reply.first_lost);
                    }
                }
                Ok(Err(status)) => last_error = status.message().to_string(),
                Err(_) => last_error = format!("no answer within {per_call:?}"),
            }
            if !self.timeout.is_zero() && answered_at.elapsed() > self.timeout {
                watch.scheduler_lost(&format!(
                    "did not answer heart-beats for {:?} (last error: {last_error})",
                    self.timeout
                ));
                return;
            }
        }
    }
}
