//! A server's counters of the pushes it received and the values it sent, as a `Stats` reply
//! carries them.
//!
//! ```text
//! payload := frames:u64 entries:u64 payload_bytes:u64 frame_bytes:u64 pulled_bytes:u64
//! ```
//! (little-endian). Every push and pushpull request frame a server reads counts, whether or not
//! its entries were applied: `frames` such frames, `entries` their entries (one per key or slice
//! of a key), `payload_bytes` the bytes of those entries' payloads (the gradients as they
//! crossed the wire, compressed or not) and `frame_bytes` the whole frames, headers and length
//! prefixes included. `pulled_bytes` counts the value bytes of the replies to pulls and
//! pushpulls it sent (float16 or bfloat16 ones for low-precision pulls).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{PsError, Result};
use crate::protocol::frame::Frame;

/// Bytes of an encoded [`PushStats`].
const ENCODED_LEN: usize = 40;

/// Totals of the push and pushpull frames one server has received.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PushStats {
    /// Request frames.
    pub frames: u64,
    /// Entries of those frames.
    pub entries: u64,
    /// Bytes of the entries' payloads.
    pub payload_bytes: u64,
    /// Bytes of the whole frames on the wire.
    pub frame_bytes: u64,
    /// Bytes of the values its replies to pulls and pushpulls carried (as they crossed the
    /// wire: half a float32 value's for a float16 pull).
    pub pulled_bytes: u64,
}

impl PushStats {
    /// The reply payload.
    pub fn encode(&self) -> Vec<u8> {
        [
            self.frames,
            self.entries,
            self.payload_bytes,
            self.frame_bytes,
            self.pulled_bytes,
        ]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
    }

    /// Reads a reply payload.
    pub fn decode(payload: &[u8]) -> Result<PushStats> {
        if payload.len() != ENCODED_LEN {
            return Err(PsError::Protocol(format!(
                "server statistics of {} bytes, expected {ENCODED_LEN}",
                payload.len()
            )));
        }
        let at =
            |i: usize| u64::from_le_bytes(payload[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        Ok(PushStats {
            frames: at(0),
            entries: at(1),
            payload_bytes: at(2),
            frame_bytes: at(3),
            pulled_bytes: at(4),
        })
    }
}

/// The counters as a server keeps them, updated by every connection.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    frames: AtomicU64,
    entries: AtomicU64,
    payload_bytes: AtomicU64,
    frame_bytes: AtomicU64,
    /// Shared with every connection's outbox, which counts the replies it sends.
    pulled_bytes: Arc<AtomicU64>,
}

impl Counters {
    /// Counts a push or pushpull request frame.
    pub(crate) fn record(&self, frame: &Frame) {
        let payload: usize = frame.entries.iter().map(|e| e.payload.len()).sum();
        self.frames.fetch_add(1, Ordering::Relaxed);
        self.entries
            .fetch_add(frame.entries.len() as u64, Ordering::Relaxed);
        self.payload_bytes
            .fetch_add(payload as u64, Ordering::Relaxed);
        self.frame_bytes
            .fetch_add(frame.encoded_len() as u64, Ordering::Relaxed);
    }

    /// The counter of pulled value bytes, for a connection's outbox.
    pub(crate) fn pulled(&self) -> Arc<AtomicU64> {
        self.pulled_bytes.clone()
    }

    /// The totals so far.
    pub(crate) fn snapshot(&self) -> PushStats {
        PushStats {
            frames: self.frames.load(Ordering::Relaxed),
            entries: self.entries.load(Ordering::Relaxed),
            payload_bytes: self.payload_bytes.load(Ordering::Relaxed),
            frame_bytes: self.frame_bytes.load(Ordering::Relaxed),
            pulled_bytes: self.pulled_bytes.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bad_length() {
        let s = PushStats {
            frames: 1,
            entries: 2,
            payload_bytes: 3 << 40,
            frame_bytes: u64::MAX,
            pulled_bytes: 5,
        };
        assert_eq!(PushStats::decode(&s.encode()).unwrap(), s);
        let e = PushStats::decode(&[0; 31]).unwrap_err().to_string();
        assert!(e.contains("31 bytes, expected 40"), "{e}");
    }
}
