//! Forming the job: registrations are checked as they arrive, and once every node has
//! registered, ranks and node ids are assigned and every registration is answered. A job that
//! does not form says every [`REPORT_EVERY`] which nodes it still waits for, and past its
//! formation timeout (`MXRS_FORM_TIMEOUT`) fails every registration with that list and ends.

use tokio::sync::oneshot;
use tokio::time::{Duration, Instant};

use super::{Job, MAX_HOST_LEN, Member, Pending, Registration, State};
use crate::config::Role;
use crate::error::{PsError, Result};
use crate::placement::{NodeInfo, Topology};
use crate::scheduler::Membership;
use crate::scheduler::Shutdown;

/// How often a job that has not formed says whom it waits for.
pub(crate) const REPORT_EVERY: Duration = Duration::from_secs(30);

/// The clock of a job that has not formed yet.
#[derive(Debug, Default)]
pub(crate) struct Clock {
    /// When the wait began (the scheduler's start); None: no formation timeout is kept.
    since: Option<Instant>,
    timeout: Option<Duration>,
    next_report: Option<Instant>,
}

impl Job {
    /// Gives up on forming `timeout` after `now` (the scheduler's start), failing every
    /// registration with the list of missing nodes; `None` waits for ever (still reporting).
    pub fn with_form_timeout(mut self, timeout: Option<Duration>, now: Instant) -> Job {
        self.forming = Clock {
            since: Some(now),
            timeout,
            next_report: Some(now + REPORT_EVERY),
        };
        self
    }

    /// Whether the job still waits for registrations (it has not formed, nor ended).
    pub fn forming(&self) -> bool {
        self.members.is_empty() && !self.is_over()
    }

    /// Before the job forms: reports every [`REPORT_EVERY`] whom it waits for, and past the
    /// formation timeout fails every registration with [`PsError::NodeLost`] naming the
    /// missing nodes, then ends the job.
    pub fn check_formation(&mut self, now: Instant) {
        let Some(since) = self.forming.since else {
            return;
        };
        if !self.forming() {
            return;
        }
        let waited = now.duration_since(since);
        if let Some(timeout) = self.forming.timeout.filter(|t| waited >= *t) {
            let message = format!(
                "the job did not form within {timeout:?} (MXRS_FORM_TIMEOUT): {}",
                self.formation_census()
            );
            tracing::error!("{message}");
            for p in self.pending.drain(..) {
                let _ = p.reply.send(Err(PsError::NodeLost(message.clone())));
            }
            self.end(Shutdown {
                failed: true,
                reason: message,
            });
            return;
        }
        if self.forming.next_report.is_some_and(|at| now >= at) {
            self.forming.next_report = Some(now + REPORT_EVERY);
            tracing::warn!(
                "waited {}s for the job to form: {}",
                waited.as_secs(),
                self.formation_census()
            );
        }
    }

    /// Who has registered and who is missing: "1 of 2 workers and 2 of 2 servers have
    /// registered; missing: worker 1".
    fn formation_census(&self) -> String {
        let mut have = Vec::new();
        let mut missing = Vec::new();
        for (role, limit) in [
            (Role::Worker, self.num_workers),
            (Role::Server, self.num_servers),
        ] {
            let regs: Vec<&Registration> = self
                .pending
                .iter()
                .map(|p| &p.reg)
                .filter(|r| r.role == role)
                .collect();
            have.push(format!("{} of {limit} {role}s", regs.len()));
            let lacking = limit as usize - regs.len().min(limit as usize);
            if lacking == 0 {
                continue;
            }
            if !regs.is_empty() && regs.iter().all(|r| r.rank.is_some()) {
                let ranks = (0..limit).filter(|k| !regs.iter().any(|r| r.rank == Some(*k)));
                missing.extend(ranks.map(|k| format!("{role} {k}")));
            } else {
                missing.push(format!(
                    "{lacking} {role}{}",
                    if lacking == 1 { "" } else { "s" }
                ));
            }
        }
        format!(
            "{} have registered; missing: {}",
            have.join(" and "),
            missing.join(", ")
        )
    }

    /// Takes a registration. The receiver gets the node's membership once the last node of the
    /// job has registered; the ticket withdraws the registration if the node goes away first.
    pub fn register(
        &mut self,
        reg: Registration,
        now: Instant,
    ) -> Result<(u64, oneshot::Receiver<Result<Membership>>)> {
        self.check_node(&reg)?;
        if !self.members.is_empty() {
            return self.readmit(reg, now);
        }
        self.check_place(&reg)?;
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let (reply, rx) = oneshot::channel();
        self.pending.push(Pending { ticket, reg, reply });
        if self.pending.len() as u64 == u64::from(self.num_workers) + u64::from(self.num_servers) {
            self.form(now);
        }
        Ok((ticket, rx))
    }

    /// Checks what a registration says of its node and of the job's size.
    fn check_node(&self, reg: &Registration) -> Result<()> {
        let refuse = |msg: String| Err(PsError::Rejected(msg));
        if self.is_over() {
            return Err(PsError::Shutdown);
        }
        if reg.role == Role::Scheduler {
            return refuse("only workers and servers register with the scheduler; this node's DMLC_ROLE is scheduler".into());
        }
        for (var, theirs, ours) in [
            ("DMLC_NUM_WORKER", reg.num_workers, self.num_workers),
            ("DMLC_NUM_SERVER", reg.num_servers, self.num_servers),
        ] {
            if theirs != ours {
                return refuse(format!(
                    "{var} is {theirs} on this node but {ours} at the scheduler"
                ));
            }
        }
        if reg.host.len() > MAX_HOST_LEN {
            return refuse(format!("host name of {} bytes is too long", reg.host.len()));
        }
        if reg.role == Role::Server && !(1..=u32::from(u16::MAX)).contains(&reg.port) {
            return refuse(format!(
                "a server must advertise its data-plane port (1-65535), not {}",
                reg.port
            ));
        }
        Ok(())
    }

    /// Checks that a registration before the job formed has a place: its role's places are
    /// not all taken, and the rank it asks for exists and is free.
    fn check_place(&self, reg: &Registration) -> Result<()> {
        let refuse = |msg: String| Err(PsError::Rejected(msg));
        let (same_role, limit, var) = match reg.role {
            Role::Worker => (Role::Worker, self.num_workers, "DMLC_NUM_WORKER"),
            _ => (Role::Server, self.num_servers, "DMLC_NUM_SERVER"),
        };
        let registered = self.pending.iter().filter(|p| p.reg.role == same_role);
        if registered.count() as u32 >= limit {
            return refuse(format!(
                "the job has {limit} {same_role} places and all are taken; \
                 is {var} the same on every node?"
            ));
        }
        if let Some(id) = reg.rank {
            let id_var = match same_role {
                Role::Worker => "DMLC_WORKER_ID",
                _ => "DMLC_SERVER_ID",
            };
            if id >= limit {
                return refuse(format!(
                    "{id_var} is {id} but the job has {limit} {same_role}s (ids 0..{})",
                    limit - 1
                ));
            }
            let taken = self
                .pending
                .iter()
                .find(|p| p.reg.role == same_role && p.reg.rank == Some(id));
            if let Some(other) = taken {
                return refuse(format!(
                    "{id_var} {id} is already taken by the {same_role} on {}",
                    other.reg.host
                ));
            }
        }
        Ok(())
    }

    /// Withdraws a registration whose node went away before the job formed.
    pub fn withdraw(&mut self, ticket: u64) {
        self.pending.retain(|p| p.ticket != ticket);
    }

    /// Everyone has registered: assign ranks and node ids, answer every registration.
    fn form(&mut self, now: Instant) {
        let pending = std::mem::take(&mut self.pending);
        let (workers, servers): (Vec<Pending>, Vec<Pending>) = pending
            .into_iter()
            .partition(|p| p.reg.role == Role::Worker);
        let mut ordered = ranked(servers, self.num_servers);
        ordered.extend(ranked(workers, self.num_workers));

        let mut replies = Vec::with_capacity(ordered.len());
        for (i, (rank, p)) in ordered.into_iter().enumerate() {
            let port = match p.reg.role {
                Role::Server => p.reg.port as u16,
                _ => 0,
            };
            let info = NodeInfo {
                node_id: i as u32 + 1,
                role: p.reg.role,
                rank,
                host: p.reg.host,
                port,
            };
            self.members.push(Member {
                info,
                state: State::Alive,
                last_seen: now,
                subscription: None,
            });
            replies.push(p.reply);
        }
        let servers: Vec<NodeInfo> = self.members[..self.num_servers as usize]
            .iter()
            .map(|m| m.info.clone())
            .collect();
        if self.replicas > 0 && self.num_servers > 1 {
            self.topology = Some(Topology {
                epoch: 0,
                chains: crate::placement::chains(self.num_servers, self.replicas, &[]),
                servers: servers.clone(),
            });
        }
        for (i, reply) in replies.into_iter().enumerate() {
            let me = self.members[i].info.clone();
            let membership = Membership {
                me,
                num_workers: self.num_workers,
                num_servers: self.num_servers,
                servers: servers.clone(),
                rejoined: false,
            };
            if reply.send(Ok(membership)).is_err() {
                // Its node went away just as the job formed.
                self.declare_lost(i as u32 + 1, "disconnected while the job formed", now);
            }
        }
    }
}

/// Ranks for the registrations of one role: those that asked for a rank get it, the others fill
/// the gaps in arrival order. Sorted by rank.
fn ranked(regs: Vec<Pending>, size: u32) -> Vec<(u32, Pending)> {
    let mut taken = vec![false; size as usize];
    for p in &regs {
        if let Some(id) = p.reg.rank {
            taken[id as usize] = true;
        }
    }
    let mut free = (0..size).filter(|&r| !taken[r as usize]);
    let mut out: Vec<(u32, Pending)> = regs
        .into_iter()
        .map(|p| (p.reg.rank.or_else(|| free.next()).unwrap_or(0), p))
        .collect();
    out.sort_by_key(|(rank, _)| *rank);
    out
}
