//! Framed halves of a data-plane connection: a reader that owns the read buffer and a writer
//! that owns the queue of outgoing bytes (mini-redis style, split so one task reads and one
//! writes).
//!
//! A server's readers share a [`Budget`]: a large frame is read only once its bytes fit in what
//! the budget has left, so many connections announcing large frames at once wait instead of
//! filling memory, and a large frame whose bytes stop coming closes its connection.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::frame::Frame;
use super::pool;
use crate::error::{PsError, Result};

/// Payloads at or above this size are written straight from their own memory; smaller ones are
/// copied next to their header (cheaper than an I/O vector of their own).
const INLINE_LIMIT: usize = 512;
/// Queued bytes that trigger a send before `flush`.
const SEND_AT: usize = 1 << 20;
/// I/O vectors per write call (Linux accepts 1024).
const MAX_IOV: usize = 1024;
/// Read-buffer growth step for small frames (large ones get a buffer of their own).
const READ_STEP: usize = 256 * 1024;

/// How long a large frame's bytes may stop coming before its connection is closed.
pub const FRAME_STALL: Duration = Duration::from_secs(30);

/// Bytes of large frames that may be read at once, shared by every reader of a server.
#[derive(Debug)]
pub struct Budget {
    bytes: Arc<Semaphore>,
    total: u64,
}

impl Budget {
    /// A budget of `total` bytes.
    pub fn new(total: u64) -> Budget {
        let total = total.min(Semaphore::MAX_PERMITS as u64);
        Budget {
            bytes: Arc::new(Semaphore::new(total as usize)),
            total,
        }
    }

    /// Bytes taken now.
    pub fn in_use(&self) -> u64 {
        self.total - self.bytes.available_permits() as u64
    }

    /// Waits until `n` bytes are free and takes them until the permit is dropped.
    async fn take(&self, n: usize) -> Result<OwnedSemaphorePermit> {
        let fits = u32::try_from(n)
            .ok()
            .filter(|&n| u64::from(n) <= self.total);
        let Some(n) = fits else {
            return Err(PsError::Protocol(format!(
                "frame of {n} bytes is over the server's in-flight budget of {} bytes \
                 (MXRS_MAX_INFLIGHT_BYTES)",
                self.total
            )));
        };
        self.bytes
            .clone()
            .acquire_many_owned(n)
            .await
            .map_err(|_| PsError::Shutdown)
    }
}

/// Reads whole frames from a byte stream.
pub struct FrameReader<R> {
    inner: R,
    buf: BytesMut,
    max_frame: u64,
    budget: Option<Arc<Budget>>,
    /// The budget taken by the last large frame, given back when the next one is asked for
    /// (by then the caller has handled it).
    held: Option<OwnedSemaphorePermit>,
}

impl<R> std::fmt::Debug for FrameReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameReader")
            .field("buffered", &self.buf.len())
            .field("max_frame", &self.max_frame)
            .finish_non_exhaustive()
    }
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// Reads frames of at most `max_frame` bytes from `inner`.
    pub fn new(inner: R, max_frame: u64) -> Self {
        FrameReader {
            inner,
            buf: BytesMut::with_capacity(READ_STEP),
            max_frame,
            budget: None,
            held: None,
        }
    }

    /// Reads frames of at most `max_frame` bytes from `inner`, each large frame within
    /// `budget`.
    pub fn with_budget(inner: R, max_frame: u64, budget: Arc<Budget>) -> Self {
        FrameReader {
            budget: Some(budget),
            ..FrameReader::new(inner, max_frame)
        }
    }

    /// The next frame; `Ok(None)` when the peer closed the connection between frames.
    pub async fn read_frame(&mut self) -> Result<Option<Frame>> {
        self.held = None;
        loop {
            if let Some(n) = Frame::check(&self.buf, self.max_frame)? {
                let bytes: Bytes = self.buf.split_to(n).freeze();
                return Frame::parse(bytes).map(Some);
            }
            if let Some(total) = Frame::announced_len(&self.buf)
                && total >= pool::POOLED_MIN
            {
                if let Some(budget) = &self.budget {
                    self.held = Some(budget.take(total).await?);
                }
                return self.read_large(total).await.map(Some);
            }
            self.buf.reserve(READ_STEP);
            if self.fill().await? == 0 {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(closed_inside(self.buf.len()))
                };
            }
        }
    }

    /// Reads a frame of `total` bytes (already checked against the limit) into a recycled
    /// buffer, straight from the socket, so large tensors are neither copied nor page-faulted.
    async fn read_large(&mut self, total: usize) -> Result<Frame> {
        let mut frame = pool::take(total);
        let have = self.buf.len().min(total);
        frame.extend_from_slice(&self.buf.split_to(have));
        while frame.len() < total {
            let room = total - frame.len();
            let mut room = (&mut frame).limit(room);
            let read = self.inner.read_buf(&mut room);
            let n = match self.budget {
                None => read.await,
                Some(_) => tokio::time::timeout(FRAME_STALL, read).await.map_err(|_| {
                    PsError::Protocol(format!(
                        "no byte for {FRAME_STALL:?} inside a frame of {total} bytes"
                    ))
                })?,
            }
            .map_err(|e| PsError::io("read", e))?;
            if n == 0 {
                return Err(closed_inside(frame.len()));
            }
        }
        Frame::parse(pool::freeze(frame))
    }

    async fn fill(&mut self) -> Result<usize> {
        self.inner
            .read_buf(&mut self.buf)
            .await
            .map_err(|e| PsError::io("read", e))
    }
}

fn closed_inside(pending: usize) -> PsError {
    PsError::Protocol(format!(
        "connection closed inside a frame ({pending} bytes pending)"
    ))
}

/// Writes frames to a byte stream with vectored writes: headers are gathered into one buffer and
/// payloads are handed to the kernel from their own memory, so no tensor byte is copied in user
/// space. Call [`FrameWriter::flush`] when no more frames are queued.
pub struct FrameWriter<W> {
    inner: W,
    scratch: BytesMut,
    chunks: VecDeque<Bytes>,
    queued: usize,
}

impl<W> std::fmt::Debug for FrameWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameWriter")
            .field("queued", &self.queued)
            .finish_non_exhaustive()
    }
}

impl<W: AsyncWrite + Unpin> FrameWriter<W> {
    /// Writes to `inner`.
    pub fn new(inner: W) -> Self {
        FrameWriter {
            inner,
            scratch: BytesMut::with_capacity(64 * 1024),
            chunks: VecDeque::new(),
            queued: 0,
        }
    }

    /// Queues `frame`, sending once enough has gathered.
    pub async fn write_frame(&mut self, frame: &Frame) -> Result<()> {
        let mut out = Vec::with_capacity(2 * frame.entries.len() + 1);
        frame.encode(&mut self.scratch, INLINE_LIMIT, &mut out);
        self.queued += out.iter().map(Bytes::len).sum::<usize>();
        self.chunks.extend(out);
        if self.queued >= SEND_AT || self.chunks.len() >= MAX_IOV {
            self.flush().await?;
        }
        Ok(())
    }

    /// Sends everything queued.
    pub async fn flush(&mut self) -> Result<()> {
        while !self.chunks.is_empty() {
            let slices: Vec<IoSlice<'_>> = self
                .chunks
                .iter()
                .take(MAX_IOV)
                .map(|c| IoSlice::new(c))
                .collect();
            let mut n = self
                .inner
                .write_vectored(&slices)
                .await
                .map_err(|e| PsError::io("write", e))?;
            drop(slices);
            if n == 0 {
                return Err(PsError::io("write", std::io::ErrorKind::WriteZero.into()));
            }
            self.queued -= n;
            while n > 0 {
                let front = self.chunks.front_mut().expect("written bytes were queued");
                if n >= front.len() {
                    n -= front.len();
                    self.chunks.pop_front();
                } else {
                    front.advance(n);
                    n = 0;
                }
            }
        }
        self.inner
            .flush()
            .await
            .map_err(|e| PsError::io("write", e))
    }

    /// Flushes and closes the write side.
    pub async fn shutdown(&mut self) -> Result<()> {
        self.flush().await?;
        self.inner
            .shutdown()
            .await
            .map_err(|e| PsError::io("shutdown", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::protocol::frame::{Entry, Op};

    #[tokio::test]
    async fn frames_cross_a_pipe_in_pieces() {
        let (a, b) = tokio::io::duplex(1000);
        let mut w = FrameWriter::new(a);
        let mut r = FrameReader::new(b, 1 << 30);
        let mut big = Entry::new(1, DType::F32, &[100_000], 0, 100_000);
        big.payload = Bytes::from(vec![3u8; 400_000]);
        let frames = vec![
            Frame::request(Op::Push, 1, vec![big]),
            Frame::request(Op::Pull, 2, vec![Entry::new(2, DType::F64, &[3], 0, 3)]),
        ];
        let sent = frames.clone();
        let writer = tokio::spawn(async move {
            for f in &sent {
                w.write_frame(f).await.unwrap();
            }
            w.shutdown().await.unwrap();
        });
        for f in &frames {
            assert_eq!(r.read_frame().await.unwrap().as_ref(), Some(f));
        }
        assert_eq!(r.read_frame().await.unwrap(), None);
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn truncated_stream_is_an_error() {
        let bytes =
            Frame::request(Op::Pull, 2, vec![Entry::new(2, DType::F64, &[3], 0, 3)]).to_bytes();
        let mut r = FrameReader::new(&bytes[..bytes.len() - 3], 1 << 30);
        assert!(
            matches!(r.read_frame().await, Err(PsError::Protocol(m)) if m.contains("closed inside"))
        );
    }
}
