//! Row-sparse keys: tables (embeddings) of which a step touches only some rows.
//!
//! `init_rows` creates a key whose first dimension is its rows, placed by rows
//! ([`crate::placement::Partitioner::row_parts`]); every operation on it uses that placement, the
//! dense `push`/`pull` included. `push_rows` sends each piece of the key exactly its rows (ids and
//! values), and a piece none of whose rows are pushed an empty message, so that its dist_sync
//! round still completes; `pull_rows` asks each piece for its rows only (a piece with none is
//! not asked) and waits, as a dense pull does, for the rounds this worker pushed.
//!
//! Ids are `int64` (little-endian) and must be strictly increasing and within the key's rows;
//! everything is checked before anything is counted or sent.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::{KeyMeta, Worker, ticket};
use crate::codec::Compression;
use crate::dtype::{DType, describe_array};
use crate::error::{PsError, Result};
use crate::protocol::frame::rows::{ID_BYTES, check_ids, encode_pull, encode_push, ids_below};
use crate::protocol::frame::{Entry, Op};
use ticket::Ticket;

use super::batch::Batch;
use super::order::Access;

/// A row-sparse key's rows and elements per row.
fn layout(key: u64, meta: &KeyMeta) -> Result<(u64, u64)> {
    meta.rows.ok_or_else(|| {
        PsError::InvalidRows(format!(
            "key {key} is not row-sparse: it was initialised with init, not init_rows (push and \
             pull it whole)"
        ))
    })
}

/// Where the ids of each part of a row-sparse key begin and end: `(part, lo, hi)` for ids
/// `lo..hi` (by index into `ids`).
fn split(meta: &KeyMeta, ids: &[u8], row_len: u64) -> impl Iterator<Item = (usize, usize, usize)> {
    meta.parts.iter().enumerate().map(move |(i, part)| {
        let rows = part.rows(row_len);
        (i, ids_below(ids, rows.start), ids_below(ids, rows.end))
    })
}

impl Worker {
    /// Creates row-sparse keys: `(key, dtype, shape, value)`, `shape[0]` the rows, each row the
    /// product of the other dims (at least one row of at least one element). As
    /// [`Worker::init`] otherwise: rank 0's values are stored, every worker initialises the same
    /// keys the same way.
    pub fn init_rows(&self, items: Vec<(u64, DType, Vec<u64>, Bytes)>) -> Ticket {
        self.init_request(items, true)
    }

    /// A row-sparse key's table entry, its rows and row length.
    fn rows_meta(&self, key: u64) -> Result<(Arc<KeyMeta>, u64, u64)> {
        let meta = self.meta(key)?;
        let (rows, row_len) = layout(key, &meta)?;
        Ok((meta, rows, row_len))
    }

    /// Pushes some rows of row-sparse keys: `(key, ids, dtype, values)`, `ids` int64 row ids
    /// (8 bytes each, strictly increasing, within the key's rows) and `values` their rows in the
    /// key's dtype. Each piece of the key gets its rows (or none) as its push of the round; the
    /// request's frames are written after queued ones of higher `priority`. Compression is
    /// refused: MXNet compresses dense gradients only.
    pub fn push_rows(
        &self,
        items: Vec<(u64, Bytes, DType, Bytes)>,
        compression: Option<Compression>,
        priority: i32,
    ) -> Ticket {
        if let (Some(c), Some((key, ..))) = (compression, items.first()) {
            return Ticket::failed(PsError::Rejected(format!(
                "key {key}: gradient compression ({}) does not apply to row-sparse pushes; push \
                 rows uncompressed",
                c.name()
            )));
        }
        let checked: Result<Vec<_>> = items
            .iter()
            .map(|(key, ids, dtype, values)| {
                let (meta, rows, row_len) = self.rows_meta(*key)?;
                if *dtype != meta.dtype {
                    return Err(PsError::ShapeMismatch(format!(
                        "key {key}: pushed rows of {dtype} but the key holds {}",
                        describe_array(meta.dtype, &meta.shape)
                    )));
                }
                check_ids(*key, ids, rows, 0, rows)?;
                let n = (ids.len() / ID_BYTES) as u64;
                let expected = n * row_len * dtype.size() as u64;
                if values.len() as u64 != expected {
                    return Err(PsError::ShapeMismatch(format!(
                        "key {key}: {n} row ids but {} bytes of values; {n} rows of {row_len} \
                         {dtype} take {expected} (the key holds {})",
                        values.len(),
                        describe_array(meta.dtype, &meta.shape)
                    )));
                }
                Ok((meta, row_len))
            })
            .collect();
        let metas = match checked {
            Ok(metas) => metas,
            Err(e) => return Ticket::failed(e),
        };
        let route = self.route();
        let mut batch = Batch::new(Op::PushRows, self.conns.len(), priority);
        for ((key, ids, _, values), (meta, row_len)) in items.into_iter().zip(metas) {
            let row_bytes = row_len as usize * meta.dtype.size();
            for (i, lo, hi) in split(&meta, &ids, row_len) {
                let part = &meta.parts[i];
                let mut e = meta.entry(key, part);
                e.round = meta.pushes[i].fetch_add(1, Ordering::Relaxed);
                e.payload = encode_push(
                    &ids[lo * ID_BYTES..hi * ID_BYTES],
                    &values[lo * row_bytes..hi * row_bytes],
                );
                batch.add(route[part.server], e);
            }
        }
        // Behind the pieces' reads in flight, as dense pushes ([`super::order`]).
        let frames = batch.into_frames().map(|(s, f)| (s, f, Access::Write));
        let replies = self.order.send(&self.conns, frames.collect(), priority);
        let ticket = Ticket::new(replies, ticket::Plan::Ack);
        self.sweep_lost();
        ticket
    }

    /// Pulls some rows of row-sparse keys: `(key, ids)`, ids as for [`Worker::push_rows`]. Each
    /// key's value is its rows in order (`ids.len() / 8` rows in the key's dtype); in dist_sync
    /// it includes every push this worker made before. No ids, no request.
    pub fn pull_rows(&self, items: Vec<(u64, Bytes)>, priority: i32) -> Ticket {
        let checked: Result<Vec<_>> = items
            .iter()
            .map(|(key, ids)| {
                let (meta, rows, row_len) = self.rows_meta(*key)?;
                check_ids(*key, ids, rows, 0, rows)?;
                Ok((meta, row_len))
            })
            .collect();
        let metas = match checked {
            Ok(metas) => metas,
            Err(e) => return Ticket::failed(e),
        };
        let route = self.route();
        let mut batch = Batch::new(Op::PullRows, self.conns.len(), priority);
        let mut gathers = Vec::with_capacity(items.len());
        for ((key, ids), (meta, row_len)) in items.into_iter().zip(metas) {
            let row_bytes = row_len as usize * meta.dtype.size();
            let mut pieces = Vec::new();
            for (i, lo, hi) in split(&meta, &ids, row_len).filter(|(_, lo, hi)| hi > lo) {
                let part = &meta.parts[i];
                let e = Entry {
                    round: meta.pushes[i].load(Ordering::Relaxed),
                    payload: encode_pull(&ids[lo * ID_BYTES..hi * ID_BYTES]),
                    ..meta.entry(key, part)
                };
                let (frame, entry) = batch.add(route[part.server], e);
                pieces.push(ticket::Piece {
                    frame,
                    entry,
                    at: lo * row_bytes,
                    len: (hi - lo) * row_bytes,
                });
            }
            gathers.push(ticket::Gather {
                key,
                bytes: ids.len() / ID_BYTES * row_bytes,
                pieces,
            });
        }
        // Answered before the pieces' later writes go ([`super::order`]).
        let frames = batch.into_frames().map(|(s, f)| (s, f, Access::Read));
        let replies = self.order.send(&self.conns, frames.collect(), priority);
        let ticket = Ticket::new(replies, ticket::Plan::Values(gathers));
        self.sweep_lost();
        ticket
    }

    /// A row-sparse key's rows, row shape and dtype (what `pull_rows` fills and `push_rows`
    /// takes per row); `None` for a key not initialised with [`Worker::init_rows`].
    pub fn row_layout(&self, key: u64) -> Option<(u64, Vec<u64>, DType)> {
        let meta = self.meta(key).ok()?;
        let (rows, _) = meta.rows?;
        Some((rows, meta.shape[1..].to_vec(), meta.dtype))
    }
}
