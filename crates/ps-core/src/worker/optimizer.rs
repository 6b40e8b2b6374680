//! What a worker asks of every server: the optimizer they run and its hyper-parameters, the
//! optimizer states saved and loaded (each key's from and to the server that holds it now), and
//! the servers' push counters.

use bytes::Bytes;

use super::{Worker, ticket};
use crate::dtype::DType;
use crate::error::{PsError, Result};
use crate::protocol::frame::{Entry, Op};
use crate::protocol::states;
use crate::protocol::stats::PushStats;
use crate::updater::OptimizerSpec;
use ticket::Ticket;

impl Worker {
    /// Sends the optimizer to every server (they keep the states if it is the one they run).
    pub async fn set_optimizer(&self, spec: &OptimizerSpec) -> Result<()> {
        self.broadcast(Op::SetOptimizer, Bytes::from(spec.encode()))
            .wait()
            .await
            .map(drop)
    }

    /// Changes hyper-parameters (such as `learning_rate`) on every server, keeping states.
    pub async fn set_params(&self, change: &OptimizerSpec) -> Result<()> {
        self.broadcast(Op::SetParams, Bytes::from(change.encode()))
            .wait()
            .await
            .map(drop)
    }

    /// The optimizer states of every server, as one blob for [`Worker::load_states`].
    pub async fn save_states(&self) -> Result<Vec<u8>> {
        let blobs = self.broadcast(Op::SaveStates, Bytes::new()).wait().await?;
        let mut pieces = Vec::new();
        for blob in &blobs {
            pieces.extend(states::split(blob)?);
        }
        Ok(states::join(&pieces))
    }

    /// Restores optimizer states saved by [`Worker::save_states`], sending each key's state to
    /// the server that holds it now.
    pub async fn load_states(&self, blob: &[u8]) -> Result<()> {
        let pieces = states::split(blob)?;
        let mut per_server: Vec<Vec<_>> = vec![Vec::new(); self.conns.len()];
        for piece in pieces {
            let (key, offset, ..) = piece;
            let meta = self.meta(key)?;
            let part = meta
                .parts
                .iter()
                .find(|p| p.offset == offset)
                .ok_or_else(|| {
                    PsError::Rejected(format!(
                        "saved optimizer state for key {key} at element {offset} does not match \
                     how this job places the key (was the number of servers different?)"
                    ))
                })?;
            per_server[self.route()[part.server]].push(piece);
        }
        let replies = per_server
            .iter()
            .zip(self.conns.all())
            .map(|(pieces, conn)| {
                let mut e = Entry::new(0, DType::F32, &[], 0, 0);
                e.payload = Bytes::from(states::join(pieces));
                conn.send(Op::LoadStates, vec![e], 0)
            })
            .collect();
        self.sweep_lost();
        Ticket::new(replies, ticket::Plan::Ack)
            .wait()
            .await
            .map(drop)
    }

    fn broadcast(&self, op: Op, payload: Bytes) -> Ticket {
        let replies = self
            .conns
            .all()
            .iter()
            .map(|conn| {
                let mut e = Entry::new(0, DType::F32, &[], 0, 0);
                e.payload = payload.clone();
                conn.send(op, vec![e], 0)
            })
            .collect();
        self.sweep_lost();
        Ticket::new(replies, ticket::Plan::Payloads)
    }

    /// What every server has received in push and pushpull frames so far, by server rank.
    pub async fn server_stats(&self) -> Result<Vec<PushStats>> {
        let payloads = self.broadcast(Op::Stats, Bytes::new()).wait().await?;
        payloads.iter().map(|p| PushStats::decode(p)).collect()
    }
}
