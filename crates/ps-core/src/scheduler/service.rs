//! The scheduler as a gRPC service: [`serve`] runs it on a listener until the job ends.
//!
//! The handlers are thin: they translate between the wire and [`Job`], whose lock is never held
//! across an `.await`. Calls that wait (registration, barriers) wait on oneshot channels that the
//! job answers. Each event stream has a forwarding task that passes the job's notices on and
//! notices when the node's end of the stream goes away.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use super::closer::Closer;
use super::membership::{Job, Notice, Registration, Subscription};
use super::{Outcome, group_from_pb, role_from_pb};
use crate::config::{Config, Role};
use crate::error::{PsError, Result};
use crate::metrics::SchedulerMetrics;
use crate::protocol::pb::scheduler_server::{Scheduler, SchedulerServer};
use crate::protocol::transport::Credentials;
use crate::protocol::{pb, transport};
use crate::task::AbortOnDrop;

/// How long the nodes have at most to hear the shutdown order and close their event streams;
/// never longer than the heartbeat timeout, after which a silent node counts as lost anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);
/// How long connections then have to close politely before they are cut.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// Events an event stream buffers for a node that does not read them.
const EVENT_BUFFER: usize = 16;

/// Runs the scheduler on `listener` (already bound by the caller) until the job ends or
/// `shutdown` resolves.
///
/// The job ends when every worker has finished or been lost: the scheduler sends the shutdown
/// order to every node still connected, gives them a few seconds to close their event streams,
/// stops serving and returns [`Outcome::Completed`], or [`Outcome::Failed`] naming the first lost
/// node. When `shutdown` resolves first, the nodes are told the job failed and so is the result.
/// Dropping the returned future stops the scheduler and cuts every connection.
///
/// # Errors
/// [`PsError::Config`] for a job without workers or servers; [`PsError::Rpc`] when the gRPC
/// server itself fails.
pub async fn serve(
    cfg: &Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<Outcome> {
    let creds = Credentials::from_config(cfg)?;
    for (var, n) in [
        ("DMLC_NUM_WORKER", cfg.num_workers),
        ("DMLC_NUM_SERVER", cfg.num_servers),
    ] {
        if n == 0 {
            let reason = "must be at least 1".into();
            return Err(PsError::Config {
                var: var.into(),
                reason,
            });
        }
    }
    let addr = listener
        .local_addr()
        .map_err(|e| PsError::io("scheduler listener address", e))?;
    tracing::info!(
        "scheduler on {addr}: waiting for {} workers and {} servers",
        cfg.num_workers,
        cfg.num_servers
    );
    let shared = Arc::new(Shared {
        job: Mutex::new(
            Job::new(cfg.num_workers, cfg.num_servers)
                .with_form_timeout(cfg.form_timeout, Instant::now())
                .with_rejoin(cfg.rejoin_timeout)
                .with_replicas(cfg.replicas),
        ),
        closing: watch::channel(false).0,
        streams: watch::channel(0).0,
        metrics: SchedulerMetrics::new(),
    });
    let _endpoint = match cfg.metrics_port {
        Some(port) => Some(AbortOnDrop(
            start_metrics(shared.clone(), addr.ip(), port).await?,
        )),
        None => None,
    };
    let closer = Closer::new();
    let wrapper = closer.wrapper();
    let refused = shared.metrics.refused.clone();
    let incoming =
        transport::authenticated(listener, creds, refused).map(move |s| s.map(|s| wrapper.wrap(s)));
    let service = SchedulerServer::new(Service {
        shared: shared.clone(),
    });
    let (stop, stopped) = oneshot::channel::<()>();
    let mut server = AbortOnDrop(tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming_shutdown(incoming, async {
                let _ = stopped.await;
            })
            .await
    }));
    let heartbeat_timeout = (!cfg.heartbeat_interval.is_zero() && !cfg.heartbeat_timeout.is_zero())
        .then_some(cfg.heartbeat_timeout);
    let period = [heartbeat_timeout, cfg.rejoin_timeout]
        .into_iter()
        .flatten()
        .min();
    let checker = period.map(|period| {
        AbortOnDrop(tokio::spawn(check_liveness(
            shared.clone(),
            heartbeat_timeout,
            period,
        )))
    });

    let _forming = AbortOnDrop(tokio::spawn(watch_formation(shared.clone())));

    let mut ended = shared.job().ended();
    tokio::select! {
        _ = ended.wait_for(Option::is_some) => {}
        _ = shutdown => shared.job().stop("the scheduler was stopped before the job finished"),
        failed = &mut server.0 => {
            shared.job().stop("the scheduler's gRPC server failed");
            let why = match failed {
                Ok(Ok(())) => "stopped unexpectedly".to_string(),
                Ok(Err(e)) => transport::source_chain(&e),
                Err(e) => e.to_string(),
            };
            return Err(PsError::Rpc(format!("gRPC server on {addr} failed: {why}")));
        }
    }
    // The job is over: it ended by itself, or `stop` just ended it.
    let end = shared.job().ended().borrow().clone();
    let end = end.unwrap_or_else(|| super::Shutdown {
        failed: true,
        reason: "the job ended without a reason".into(),
    });

    // Let every node hear the order and hang up, then stop serving; cut whoever lingers.
    let grace = match cfg.heartbeat_timeout.is_zero() {
        true => SHUTDOWN_GRACE,
        false => SHUTDOWN_GRACE.min(cfg.heartbeat_timeout),
    };
    let mut streams = shared.streams.subscribe();
    if tokio::time::timeout(grace, streams.wait_for(|&n| n == 0))
        .await
        .is_err()
    {
        let open = *streams.borrow();
        tracing::warn!("{open} nodes did not close their event streams after the shutdown order");
    }
    shared.closing.send_replace(true);
    let _ = stop.send(());
    if tokio::time::timeout(CLOSE_GRACE, &mut server.0)
        .await
        .is_err()
    {
        tracing::debug!("cutting connections that did not close");
        closer.close();
        let _ = (&mut server.0).await;
    }
    if let Some(mut checker) = checker {
        let _ = (&mut checker.0).await;
    }
    tracing::info!("scheduler on {addr} stopped: {}", end.reason);
    Ok(match end.failed {
        false => Outcome::Completed,
        true => Outcome::Failed(end.reason),
    })
}

/// State shared by the handlers, the forwarding tasks and [`serve`].
struct Shared {
    job: Mutex<Job>,
    /// Set once the forwarding tasks and the liveness checker are to end.
    closing: watch::Sender<bool>,
    /// Event streams open now.
    streams: watch::Sender<usize>,
    metrics: SchedulerMetrics,
}

impl Shared {
    fn job(&self) -> MutexGuard<'_, Job> {
        self.job.lock()
    }

    /// Counts request `req` from node `node_id` and its reply, if it gets one at once.
    fn count(&self, node_id: u32, req: &impl prost::Message, reply: Option<&dyn ReplyLen>) {
        let name = self.job().node_name(node_id);
        let (n, len) = reply.map_or((0, 0), |r| (1, r.len()));
        self.metrics.exchanged(&name, req.encoded_len(), n, len);
    }

    /// The metrics as a scrape reads them.
    fn metrics_text(&self) -> String {
        let (nodes, losses) = self.job().census();
        self.metrics.set_nodes(&nodes, losses);
        self.metrics.render()
    }
}

/// The encoded length of a reply.
trait ReplyLen {
    fn len(&self) -> usize;
}

impl<M: prost::Message> ReplyLen for M {
    fn len(&self) -> usize {
        self.encoded_len()
    }
}

/// Serves the scheduler's metrics on `ip:port` until dropped; says where on stderr.
async fn start_metrics(
    shared: Arc<Shared>,
    ip: std::net::IpAddr,
    port: u16,
) -> Result<JoinHandle<()>> {
    let listener = crate::metrics::bind(ip, port, "the scheduler").await?;
    let render = Arc::new(move || shared.metrics_text());
    Ok(tokio::spawn(crate::metrics::serve(
        listener,
        render,
        std::future::pending(),
    )))
}

/// Until the job forms, once a second: reports whom it waits for, and gives up past the
/// formation timeout ([`Job::check_formation`]).
async fn watch_formation(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let mut job = shared.job();
        job.check_formation(Instant::now());
        if !job.forming() {
            return;
        }
    }
}

/// Declares lost every node silent for `timeout` (and every worker away for longer than the
/// rejoin timeout), checking four times per `period`, the shorter of the two.
async fn check_liveness(shared: Arc<Shared>, timeout: Option<Duration>, period: Duration) {
    let mut closing = shared.closing.subscribe();
    let mut tick = tokio::time::interval((period / 4).max(Duration::from_millis(5)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => shared.job().check_timeouts(Instant::now(), timeout),
            _ = closing.wait_for(|&c| c) => return,
        }
    }
}

/// The gRPC service: a handle on the shared state.
#[derive(Clone)]
struct Service {
    shared: Arc<Shared>,
}

/// Withdraws a registration if its call goes away before the job forms.
struct Withdraw<'a> {
    shared: &'a Shared,
    ticket: u64,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.shared.job().withdraw(self.ticket);
    }
}

/// Counts an open event stream for as long as its forwarding task runs.
struct OpenStream(Arc<Shared>);

impl OpenStream {
    fn new(shared: Arc<Shared>) -> OpenStream {
        shared.streams.send_modify(|n| *n += 1);
        OpenStream(shared)
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.streams.send_modify(|n| *n -= 1);
    }
}

fn refused(peer: Option<std::net::SocketAddr>, what: &str, e: PsError) -> Status {
    let peer = peer.map_or("an unknown address".to_string(), |a| a.to_string());
    tracing::warn!("refused {what} from {peer}: {e}");
    e.into()
}

#[tonic::async_trait]
impl Scheduler for Service {
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterReply>, Status> {
        let peer = request.remote_addr();
        let req = request.into_inner();
        let Some(role) = role_from_pb(req.role) else {
            let e = PsError::Rejected(format!(
                "a registration must name the role worker or server (got role {})",
                req.role
            ));
            return Err(refused(peer, "a registration", e));
        };
        let host = match req.host.trim() {
            "" => peer.map(|a| a.ip().to_string()).unwrap_or_default(),
            host => host.to_string(),
        };
        let registration = Registration {
            role,
            host,
            port: req.port,
            rank: match role {
                Role::Server => req.server_id,
                _ => req.worker_id,
            },
            num_workers: req.num_workers,
            num_servers: req.num_servers,
        };
        let registered = self.shared.job().register(registration, Instant::now());
        let (ticket, joined) = registered.map_err(|e| refused(peer, "a registration", e))?;
        let _withdraw = Withdraw {
            shared: &self.shared,
            ticket,
        };
        let membership = joined
            .await
            .map_err(|_| Status::from(PsError::Shutdown))??;
        let reply = pb::RegisterReply {
            me: Some((&membership.me).into()),
            num_workers: membership.num_workers,
            num_servers: membership.num_servers,
            servers: membership.servers.iter().map(Into::into).collect(),
            rejoined: membership.rejoined,
        };
        self.shared.count(membership.me.node_id, &req, Some(&reply));
        Ok(Response::new(reply))
    }

    async fn barrier(
        &self,
        request: Request<pb::BarrierRequest>,
    ) -> Result<Response<pb::BarrierReply>, Status> {
        let req = request.into_inner();
        self.shared
            .count(req.node_id, &req, Some(&pb::BarrierReply {}));
        let Some(group) = group_from_pb(req.group) else {
            let e = PsError::Rejected(format!("barrier of unknown group {}", req.group));
            return Err(e.into());
        };
        let released = self
            .shared
            .job()
            .enter_barrier(req.node_id, group, Instant::now())?;
        match released.await {
            Ok(result) => result?,
            Err(_) => {
                let why = format!("node {} entered the {group} barrier again", req.node_id);
                return Err(PsError::Rejected(why).into());
            }
        }
        Ok(Response::new(pb::BarrierReply {}))
    }

    async fn heartbeat(
        &self,
        request: Request<pb::HeartbeatRequest>,
    ) -> Result<Response<pb::HeartbeatReply>, Status> {
        let req = request.into_inner();
        let (lost, first) = self.shared.job().heartbeat(req.node_id, Instant::now())?;
        let reply = pb::HeartbeatReply {
            lost: lost.iter().map(Into::into).collect(),
            first_lost: first.unwrap_or_default(),
        };
        self.shared.count(req.node_id, &req, Some(&reply));
        Ok(Response::new(reply))
    }

    async fn synced(
        &self,
        request: Request<pb::SyncedRequest>,
    ) -> Result<Response<pb::SyncedReply>, Status> {
        let r = request.into_inner();
        self.shared.count(r.node_id, &r, Some(&pb::SyncedReply {}));
        let now = Instant::now();
        self.shared
            .job()
            .synced(r.node_id, r.epoch, r.backup, &r.ranges, now)?;
        Ok(Response::new(pb::SyncedReply {}))
    }

    type EventsStream = ReceiverStream<Result<pb::Event, Status>>;

    async fn events(
        &self,
        request: Request<pb::EventsRequest>,
    ) -> Result<Response<Self::EventsStream>, Status> {
        let req = request.into_inner();
        let node_id = req.node_id;
        self.shared.count(node_id, &req, None);
        let subscription = self.shared.job().subscribe(node_id, Instant::now())?;
        let (tx, rx) = mpsc::channel(EVENT_BUFFER);
        let open = OpenStream::new(self.shared.clone());
        tokio::spawn(forward(open, node_id, subscription, tx));
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn finish(
        &self,
        request: Request<pb::FinishRequest>,
    ) -> Result<Response<pb::FinishReply>, Status> {
        let req = request.into_inner();
        self.shared
            .count(req.node_id, &req, Some(&pb::FinishReply {}));
        self.shared.job().finish(req.node_id, Instant::now())?;
        Ok(Response::new(pb::FinishReply {}))
    }
}

fn to_event(notice: Notice) -> pb::Event {
    let (kind, message) = match notice {
        Notice::Lost { node, message } => (pb::event::Kind::NodeLost((&node).into()), message),
        Notice::Finished(node) => (
            pb::event::Kind::WorkerFinished((&node).into()),
            String::new(),
        ),
        Notice::Shutdown(s) => (pb::event::Kind::Shutdown((&s).into()), String::new()),
        Notice::Away { node, message } => (pb::event::Kind::WorkerAway((&node).into()), message),
        Notice::ServerFailover { node, message } => {
            (pb::event::Kind::ServerFailover((&node).into()), message)
        }
        Notice::Topology(t) => (pb::event::Kind::Topology((&t).into()), String::new()),
        Notice::Rejoined(node) => (
            pb::event::Kind::WorkerRejoined((&node).into()),
            String::new(),
        ),
    };
    pb::Event {
        kind: Some(kind),
        message,
    }
}

/// Passes the job's notices on to one node's event stream until the node hangs up (a loss,
/// unless it finished or the job is over) or the scheduler closes.
async fn forward(
    open: OpenStream,
    node_id: u32,
    subscription: Subscription,
    tx: mpsc::Sender<Result<pb::Event, Status>>,
) {
    let shared = &open.0;
    let mut closing = shared.closing.subscribe();
    let Subscription {
        id,
        backlog,
        mut notices,
    } = subscription;
    let mut queue: std::collections::VecDeque<Notice> = backlog.into();
    // The node's name in the metrics: a member by now, so it stays the same.
    let name = shared.job().node_name(node_id);
    loop {
        if let Some(notice) = queue.pop_front() {
            let event = to_event(notice);
            shared
                .metrics
                .exchanged_out(&name, prost::Message::encoded_len(&event));
            tokio::select! {
                sent = tx.send(Ok(event)) => {
                    if sent.is_err() {
                        break;
                    }
                }
                _ = closing.wait_for(|&c| c) => return,
            }
            continue;
        }
        tokio::select! {
            _ = tx.closed() => break,
            notice = notices.recv() => match notice {
                Ok(notice) => queue.push_back(notice),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    // Tell it the job's state again instead: what it missed is in there.
                    tracing::debug!("node {node_id} fell {n} notices behind");
                    queue.extend(shared.job().backlog());
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
            _ = closing.wait_for(|&c| c) => return,
        }
    }
    shared.job().disconnected(node_id, id, Instant::now());
}
