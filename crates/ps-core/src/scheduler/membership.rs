//! The job's state as pure logic: who registered, which rank each node got, who waits in which
//! barrier, who is alive, and when the job is over. No sockets and no clock of its own (callers
//! pass `now`), so every rule here is unit-tested directly.
//!
//! Answers that arrive later (a registration completed when the last node joins, a barrier
//! released when the last member enters) go out through oneshot channels; notices for every node
//! (a node was lost, the job is over) go out through a broadcast channel.
//!
//! `formation`: registrations, ranks and the moment the job forms.
//! `rejoin`: a lost worker's place kept open for its restart, and the restarted worker let in.
//! `failover`: a lost server whose keys live on on their backups, and the job's topology.
//! `replace`: a replacement server taking a lost one's place and becoming a copy again.

mod failover;
mod formation;
mod rejoin;
mod replace;

use tokio::sync::{broadcast, oneshot, watch};
use tokio::time::{Duration, Instant};

use super::{Group, Membership, NodeInfo, Shutdown, Topology};
use crate::config::Role;
use crate::error::{PsError, Result};

/// Longest host name a node may advertise.
const MAX_HOST_LEN: usize = 255;
/// Notices a slow event stream may fall behind by before it skips some.
const NOTICE_BACKLOG: usize = 64;

/// A registration as a node sent it.
#[derive(Debug, Clone)]
pub(crate) struct Registration {
    pub role: Role,
    pub host: String,
    /// Data-plane port (servers); ignored for workers.
    pub port: u32,
    /// `DMLC_WORKER_ID` (workers) or `DMLC_SERVER_ID` (servers): the rank asked for.
    pub rank: Option<u32>,
    /// The node's `DMLC_NUM_WORKER` and `DMLC_NUM_SERVER`.
    pub num_workers: u32,
    pub num_servers: u32,
}

/// What every node hears about.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Notice {
    /// A node was declared lost; `message` names it and says why.
    Lost { node: NodeInfo, message: String },
    /// A worker finished.
    Finished(NodeInfo),
    /// A worker was lost, and its place is kept for a restart (`message` says for how long).
    Away { node: NodeInfo, message: String },
    /// A restarted worker took its place back (the node as it is now, on its new host).
    Rejoined(NodeInfo),
    /// A server was lost and its keys are served by their backups from now on.
    ServerFailover { node: NodeInfo, message: String },
    /// Which servers hold each placement range changed.
    Topology(Topology),
    /// The job is over.
    Shutdown(Shutdown),
}

/// What a node gets when it subscribes to events.
pub(crate) struct Subscription {
    /// Tells this subscription apart from a later one of the same node.
    pub id: u64,
    /// Notices sent before the subscription that the node must still hear.
    pub backlog: Vec<Notice>,
    pub notices: broadcast::Receiver<Notice>,
}

type Reply<T> = oneshot::Sender<Result<T>>;

struct Pending {
    ticket: u64,
    reg: Registration,
    reply: Reply<Membership>,
}

#[derive(Debug, Clone, PartialEq)]
enum State {
    Alive,
    /// Lost, with its place kept until `since` plus the rejoin timeout.
    Away {
        since: Instant,
        message: String,
    },
    Finished,
    Lost(String),
    /// A server lost whose keys live on on their backups: it no longer counts in the job.
    Gone(String),
}

struct Member {
    info: NodeInfo,
    state: State,
    last_seen: Instant,
    subscription: Option<u64>,
}

/// The whole job, from the first registration to the shutdown order.
pub(crate) struct Job {
    num_workers: u32,
    num_servers: u32,
    /// Registrations waiting for the job to form, in arrival order.
    pending: Vec<Pending>,
    /// Once formed: every node, indexed by `node_id - 1` (servers by rank, then workers).
    members: Vec<Member>,
    /// Waiting members of each group's barrier, by node id.
    barriers: [Vec<(u32, Reply<()>)>; 3],
    lost: Vec<NodeInfo>,
    first_lost: Option<String>,
    /// Workers that finished, in the order they did.
    finished: Vec<NodeInfo>,
    next_ticket: u64,
    /// How long a lost worker's place is kept for its restart (`None`: it is lost at once).
    rejoin: Option<Duration>,
    /// Backups of each server's keys (`MXRS_REPLICAS`): a lost server is failed over.
    replicas: u32,
    /// Servers failed over, in the order they were lost (and not replaced since).
    gone: Vec<(NodeInfo, String)>,
    /// Which servers hold each range, in a job with backups once it formed.
    topology: Option<Topology>,
    /// Replacement servers not yet a full copy: each with the ranges still being copied to it.
    syncing: Vec<(u32, Vec<u32>)>,
    notices: broadcast::Sender<Notice>,
    ended: watch::Sender<Option<Shutdown>>,
    /// Nodes declared lost so far, each time one was.
    losses: u64,
    /// Until the job forms: since when it waits, its deadline and its next progress report.
    forming: formation::Clock,
}

impl Job {
    /// A job of `num_workers` workers and `num_servers` servers, none registered yet.
    pub fn new(num_workers: u32, num_servers: u32) -> Job {
        Job {
            num_workers,
            num_servers,
            pending: Vec::new(),
            members: Vec::new(),
            barriers: Default::default(),
            lost: Vec::new(),
            first_lost: None,
            finished: Vec::new(),
            next_ticket: 1,
            rejoin: None,
            replicas: 0,
            gone: Vec::new(),
            topology: None,
            syncing: Vec::new(),
            notices: broadcast::channel(NOTICE_BACKLOG).0,
            ended: watch::channel(None).0,
            losses: 0,
            forming: formation::Clock::default(),
        }
    }

    /// Keeps a lost worker's place for `timeout` so that a restarted process can take it back
    /// (`MXRS_MAX_RESTARTS`); `None` (the default) fails the job at once.
    pub fn with_rejoin(mut self, timeout: Option<Duration>) -> Job {
        self.rejoin = timeout;
        self
    }

    /// What the metrics call node `node_id`: `worker 1`, `server 0`; `node N` before the job
    /// formed.
    pub fn node_name(&self, node_id: u32) -> String {
        match self.member(node_id) {
            Ok(m) => format!("{} {}", m.info.role, m.info.rank),
            Err(_) => format!("node {node_id}"),
        }
    }

    /// How many nodes are in each state (registering, alive, away, finished, lost, gone), and
    /// how many times a node was declared lost.
    pub fn census(&self) -> ([(&'static str, usize); 6], u64) {
        let mut n = [
            ("registering", self.pending.len()),
            ("alive", 0),
            ("away", 0),
            ("finished", 0),
            ("lost", 0),
            ("gone", 0),
        ];
        for m in &self.members {
            let i = match m.state {
                State::Alive => 1,
                State::Away { .. } => 2,
                State::Finished => 3,
                State::Lost(_) => 4,
                State::Gone(_) => 5,
            };
            n[i].1 += 1;
        }
        (n, self.losses)
    }

    /// Watches for the end of the job.
    pub fn ended(&self) -> watch::Receiver<Option<Shutdown>> {
        self.ended.subscribe()
    }

    fn is_over(&self) -> bool {
        self.ended.borrow().is_some()
    }

    fn member(&self, node_id: u32) -> Result<&Member> {
        let index = node_id.checked_sub(1).map(|i| i as usize);
        index.and_then(|i| self.members.get(i)).ok_or_else(|| {
            PsError::Rejected(format!("node id {node_id} is not a member of this job"))
        })
    }

    fn member_mut(&mut self, node_id: u32) -> Result<&mut Member> {
        self.member(node_id)?;
        Ok(&mut self.members[node_id as usize - 1])
    }

    /// Notes that `node_id` is alive.
    fn seen(&mut self, node_id: u32, now: Instant) -> Result<&mut Member> {
        let m = self.member_mut(node_id)?;
        m.last_seen = now;
        Ok(m)
    }

    /// A heartbeat from `node_id`. Returns the nodes lost so far and the message about the first.
    pub fn heartbeat(
        &mut self,
        node_id: u32,
        now: Instant,
    ) -> Result<(Vec<NodeInfo>, Option<String>)> {
        self.seen(node_id, now)?;
        Ok((self.lost.clone(), self.first_lost.clone()))
    }

    /// `node_id` enters its group's barrier. The receiver is answered when every member of the
    /// group has entered, or with an error when a member is lost or finishes first.
    pub fn enter_barrier(
        &mut self,
        node_id: u32,
        group: Group,
        now: Instant,
    ) -> Result<oneshot::Receiver<Result<()>>> {
        if self.is_over() {
            return Err(PsError::Shutdown);
        }
        let me = self.seen(node_id, now)?.info.clone();
        if !group.contains(me.role) {
            return Err(PsError::Rejected(format!(
                "{me} is not a member of the {group} barrier"
            )));
        }
        for m in self.members.iter().filter(|m| group.contains(m.info.role)) {
            match &m.state {
                // A worker away may be restarted and come to the barrier; a server gone is
                // not waited for.
                State::Alive | State::Away { .. } | State::Gone(_) => {}
                State::Lost(message) => return Err(PsError::NodeLost(message.clone())),
                State::Finished => return Err(finished_error(&m.info, group)),
            }
        }
        let size = self.barrier_size(group);
        let waiting = &mut self.barriers[group.index()];
        // Drop members whose call went away, and an earlier entry of this node.
        waiting.retain(|(id, tx)| !tx.is_closed() && *id != node_id);
        let (tx, rx) = oneshot::channel();
        waiting.push((node_id, tx));
        if waiting.len() == size {
            for (_, tx) in waiting.drain(..) {
                let _ = tx.send(Ok(()));
            }
        }
        Ok(rx)
    }

    /// Fails the barriers of every group `role` belongs to.
    fn fail_barriers(&mut self, role: Role, err: impl Fn() -> PsError) {
        for group in [Group::Workers, Group::Servers, Group::All] {
            if group.contains(role) {
                for (_, tx) in self.barriers[group.index()].drain(..) {
                    let _ = tx.send(Err(err()));
                }
            }
        }
    }

    /// What a node that subscribes now must hear first: the first loss, every finished worker,
    /// the end of the job. Also sent again to a stream that fell behind.
    pub fn backlog(&self) -> Vec<Notice> {
        let mut backlog = Vec::new();
        if let (Some(node), Some(message)) = (self.lost.first(), &self.first_lost) {
            backlog.push(Notice::Lost {
                node: node.clone(),
                message: message.clone(),
            });
        }
        backlog.extend(self.finished.iter().cloned().map(Notice::Finished));
        backlog.extend(
            self.gone
                .iter()
                .map(|(node, message)| Notice::ServerFailover {
                    node: node.clone(),
                    message: message.clone(),
                }),
        );
        if let Some(t) = self.topology.as_ref().filter(|t| t.epoch > 0) {
            backlog.push(Notice::Topology(t.clone()));
        }
        if let Some(shutdown) = self.ended.borrow().clone() {
            backlog.push(Notice::Shutdown(shutdown));
        }
        backlog
    }

    /// Worker `node_id` is done.
    pub fn finish(&mut self, node_id: u32, now: Instant) -> Result<()> {
        let m = self.seen(node_id, now)?;
        let info = m.info.clone();
        if info.role != Role::Worker {
            return Err(PsError::Rejected(format!(
                "only workers finish; node {node_id} is {info}"
            )));
        }
        match &m.state {
            State::Finished => return Ok(()),
            State::Lost(message) | State::Gone(message) => {
                return Err(PsError::NodeLost(message.clone()));
            }
            State::Alive | State::Away { .. } => m.state = State::Finished,
        }
        tracing::debug!("{info} (node {node_id}) finished");
        self.finished.push(info.clone());
        let _ = self.notices.send(Notice::Finished(info.clone()));
        self.fail_barriers(Role::Worker, || finished_error(&info, Group::Workers));
        self.check_end();
        Ok(())
    }

    /// `node_id` opens its event stream.
    pub fn subscribe(&mut self, node_id: u32, now: Instant) -> Result<Subscription> {
        let id = self.next_ticket;
        self.next_ticket += 1;
        self.seen(node_id, now)?.subscription = Some(id);
        Ok(Subscription {
            id,
            backlog: self.backlog(),
            notices: self.notices.subscribe(),
        })
    }

    /// The event stream `subscription` of `node_id` closed: the node is gone unless it finished,
    /// opened a newer stream, or the job is over.
    pub fn disconnected(&mut self, node_id: u32, subscription: u64, now: Instant) {
        let current = self.member(node_id).map(|m| m.subscription);
        if matches!(current, Ok(Some(id)) if id == subscription) {
            self.declare_lost(node_id, "disconnected", now);
        }
    }

    /// Declares lost every live node silent for longer than `timeout` (`None`: heartbeats are
    /// off), and for good every worker away for longer than the rejoin timeout.
    pub fn check_timeouts(&mut self, now: Instant, timeout: Option<Duration>) {
        if let Some(timeout) = timeout {
            let silent: Vec<u32> = self
                .members
                .iter()
                .filter(|m| m.state == State::Alive && now.duration_since(m.last_seen) > timeout)
                .map(|m| m.info.node_id)
                .collect();
            for node_id in silent {
                let why = format!("stopped heart-beating for {timeout:?}");
                self.declare_lost(node_id, &why, now);
            }
        }
        self.expire_away(now);
    }

    /// Declares a live node lost: everyone hears of it and its barriers fail. A worker whose
    /// restart the job waits for is only away until then.
    fn declare_lost(&mut self, node_id: u32, why: &str, now: Instant) {
        if self.is_over() {
            return;
        }
        let rejoin = self.rejoin;
        let Ok(m) = self.member_mut(node_id) else {
            return;
        };
        if m.state != State::Alive {
            return;
        }
        let message = format!("{} (node {node_id}) {why}", m.info);
        self.losses += 1;
        let Ok(m) = self.member_mut(node_id) else {
            return;
        };
        if let (Some(timeout), Role::Worker) = (rejoin, m.info.role) {
            m.state = State::Away {
                since: now,
                message: message.clone(),
            };
            let node = m.info.clone();
            self.away(node, &message, timeout);
            return;
        }
        if self.fail_over(node_id, &message) {
            return;
        }
        self.mark_lost(node_id, message);
    }

    /// Records node `node_id` as lost for good with `message`: everyone hears of it, its
    /// barriers fail, and the job ends if no worker is left working.
    fn mark_lost(&mut self, node_id: u32, message: String) {
        let Ok(m) = self.member_mut(node_id) else {
            return;
        };
        m.state = State::Lost(message.clone());
        let node = m.info.clone();
        tracing::error!("lost {message}");
        self.lost.push(node.clone());
        self.first_lost.get_or_insert_with(|| message.clone());
        self.fail_barriers(node.role, || PsError::NodeLost(message.clone()));
        let _ = self.notices.send(Notice::Lost { node, message });
        self.check_end();
    }

    /// Ends the job once no worker is still working.
    fn check_end(&mut self) {
        let working = self.members.iter().any(|m| {
            m.info.role == Role::Worker && matches!(m.state, State::Alive | State::Away { .. })
        });
        if working {
            return;
        }
        let shutdown = match &self.first_lost {
            Some(message) => Shutdown {
                failed: true,
                reason: message.clone(),
            },
            None => Shutdown {
                failed: false,
                reason: format!("all {} workers finished", self.num_workers),
            },
        };
        self.end(shutdown);
    }

    /// Stops the job from outside (the scheduler was told to stop).
    pub fn stop(&mut self, reason: &str) {
        self.end(Shutdown {
            failed: true,
            reason: reason.into(),
        });
    }

    fn end(&mut self, shutdown: Shutdown) {
        if self.is_over() {
            return;
        }
        tracing::info!("job over: {}", shutdown.reason);
        for p in self.pending.drain(..) {
            let _ = p.reply.send(Err(PsError::Shutdown));
        }
        for waiting in &mut self.barriers {
            for (_, tx) in waiting.drain(..) {
                let _ = tx.send(Err(PsError::Shutdown));
            }
        }
        let _ = self.notices.send(Notice::Shutdown(shutdown.clone()));
        self.ended.send_replace(Some(shutdown));
    }
}

fn finished_error(info: &NodeInfo, group: Group) -> PsError {
    PsError::Rejected(format!(
        "{info} (node {}) has finished, so the {group} barrier cannot complete",
        info.node_id
    ))
}

#[cfg(test)]
#[path = "membership_tests.rs"]
mod tests;
