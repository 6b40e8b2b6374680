//! The frames a connection has yet to write, taken highest priority first.
//!
//! A worker gives each request a priority (MXNet's: a gluon Trainer pushes layer `i` with
//! priority `-i`, so the first layers, which the next forward needs first, overtake the others
//! while they wait for the link). Frames of equal priority leave in the order they came, and a
//! frame never overtakes an earlier one that carries one of its keys, so the pushes and pulls of
//! one key reach the server in the order the worker made them.

use std::collections::{BTreeMap, VecDeque};

use parking_lot::Mutex;
use rustc_hash::FxHashSet;
use tokio::sync::Notify;

use crate::protocol::frame::Frame;

/// Frames looked at for a higher priority than the oldest one's; beyond them order is kept.
const SCAN: usize = 1024;

struct Queued {
    priority: i32,
    frame: Frame,
}

#[derive(Default)]
struct Queue {
    frames: VecDeque<Queued>,
    /// How many queued frames have each priority.
    priorities: BTreeMap<i32, usize>,
    closed: bool,
}

impl Queue {
    fn push(&mut self, priority: i32, frame: Frame) {
        *self.priorities.entry(priority).or_default() += 1;
        self.frames.push_back(Queued { priority, frame });
    }

    /// The next frame to write: the oldest of the highest priority among those not held back
    /// by an earlier frame of the same key.
    fn take(&mut self) -> Option<Frame> {
        let top = *self.priorities.keys().next_back()?;
        let at = if self.frames[0].priority == top {
            0
        } else {
            self.pick()
        };
        let q = self.frames.remove(at).expect("index from the queue");
        let n = self
            .priorities
            .get_mut(&q.priority)
            .expect("counted at push");
        *n -= 1;
        if *n == 0 {
            self.priorities.remove(&q.priority);
        }
        Some(q.frame)
    }

    fn pick(&self) -> usize {
        let mut best = 0;
        let mut earlier: FxHashSet<u64> = FxHashSet::default();
        for (i, q) in self.frames.iter().enumerate().take(SCAN) {
            let held = i > 0 && q.frame.entries.iter().any(|e| earlier.contains(&e.key));
            if !held && q.priority > self.frames[best].priority {
                best = i;
            }
            earlier.extend(q.frame.entries.iter().map(|e| e.key));
        }
        best
    }
}

/// A connection's queue of frames to write, shared by the senders and the writer task.
#[derive(Default)]
pub(crate) struct Outbox {
    queue: Mutex<Queue>,
    ready: Notify,
}

impl Outbox {
    /// Queues `frame`; false once the outbox is closed (the frame is dropped).
    pub(crate) fn send(&self, priority: i32, frame: Frame) -> bool {
        {
            let mut q = self.queue.lock();
            if q.closed {
                return false;
            }
            q.push(priority, frame);
        }
        self.ready.notify_one();
        true
    }

    /// The next frame without waiting, if one is queued.
    pub(crate) fn try_next(&self) -> Option<Frame> {
        self.queue.lock().take()
    }

    /// The next frame, waiting for one; None once the outbox is closed and empty.
    pub(crate) async fn next(&self) -> Option<Frame> {
        loop {
            let notified = self.ready.notified();
            {
                let mut q = self.queue.lock();
                if let Some(frame) = q.take() {
                    return Some(frame);
                }
                if q.closed {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// Refuses further frames; the writer ends once the queued ones are written.
    pub(crate) fn close(&self) {
        self.queue.lock().closed = true;
        self.ready.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::protocol::frame::{Entry, Op};

    /// A push frame with request id `id` for `keys`.
    fn frame(id: u64, keys: &[u64]) -> Frame {
        let entries = keys
            .iter()
            .map(|&k| Entry::new(k, DType::F32, &[1], 0, 1))
            .collect();
        Frame::request(Op::Push, id, entries)
    }

    fn drain(q: &mut Queue) -> Vec<u64> {
        std::iter::from_fn(|| q.take().map(|f| f.request_id)).collect()
    }

    #[test]
    fn the_highest_priority_goes_first_and_equal_ones_keep_their_order() {
        let mut q = Queue::default();
        q.push(-5, frame(1, &[5]));
        q.push(-4, frame(2, &[4]));
        q.push(0, frame(3, &[0]));
        q.push(-4, frame(4, &[14]));
        q.push(0, frame(5, &[10]));
        assert_eq!(drain(&mut q), [3, 5, 2, 4, 1]);
        assert!(q.priorities.is_empty());
    }

    #[test]
    fn a_frame_does_not_overtake_an_earlier_one_of_the_same_key() {
        let mut q = Queue::default();
        q.push(-3, frame(1, &[3, 7]));
        q.push(0, frame(2, &[7])); // held back by frame 1 (key 7)
        q.push(-1, frame(3, &[1])); // free to overtake frame 1
        assert_eq!(drain(&mut q), [3, 1, 2]);
    }

    #[test]
    fn equal_priorities_take_the_oldest_without_a_scan() {
        let mut q = Queue::default();
        for id in 0..10_000 {
            q.push(0, frame(id, &[id % 7]));
        }
        let order = drain(&mut q);
        assert_eq!(order, (0..10_000).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_closed_outbox_refuses_frames_and_ends_after_the_queued_ones() {
        let out = Outbox::default();
        assert!(out.send(0, frame(1, &[1])));
        out.close();
        assert!(!out.send(0, frame(2, &[2])));
        assert_eq!(out.next().await.map(|f| f.request_id), Some(1));
        assert!(out.next().await.is_none());
    }
}
