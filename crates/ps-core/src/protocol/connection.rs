//! Framed halves of a data-plane connection: a reader that owns the read buffer and a writer
//! that owns the buffered writer (mini-redis style, split so one task reads and one writes).

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufWriter};

use super::frame::Frame;
use super::pool;
use crate::error::{PsError, Result};

/// Payloads at or above this size are written straight from their own memory.
const INLINE_LIMIT: usize = 32 * 1024;
/// Write buffer for headers and small payloads.
const WRITE_BUFFER: usize = 256 * 1024;
/// Read-buffer growth step for small frames (large ones get a buffer of their own).
const READ_STEP: usize = 256 * 1024;

/// Reads whole frames from a byte stream.
pub struct FrameReader<R> {
    inner: R,
    buf: BytesMut,
    max_frame: u64,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// Reads frames of at most `max_frame` bytes from `inner`.
    pub fn new(inner: R, max_frame: u64) -> Self {
        FrameReader {
            inner,
            buf: BytesMut::with_capacity(READ_STEP),
            max_frame,
        }
    }

    /// The next frame; `Ok(None)` when the peer closed the connection between frames.
    pub async fn read_frame(&mut self) -> Result<Option<Frame>> {
        loop {
            if let Some(n) = Frame::check(&self.buf, self.max_frame)? {
                let bytes: Bytes = self.buf.split_to(n).freeze();
                return Frame::parse(bytes).map(Some);
            }
            if let Some(total) = Frame::announced_len(&self.buf)
                && total >= pool::POOLED_MIN
            {
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
            let n = self
                .inner
                .read_buf(&mut (&mut frame).limit(room))
                .await
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

/// Writes frames to a byte stream; call [`FrameWriter::flush`] when no more frames are queued.
pub struct FrameWriter<W: AsyncWrite> {
    inner: BufWriter<W>,
    scratch: BytesMut,
    chunks: Vec<Bytes>,
}

impl<W: AsyncWrite + Unpin> FrameWriter<W> {
    /// Wraps `inner` in a write buffer.
    pub fn new(inner: W) -> Self {
        FrameWriter {
            inner: BufWriter::with_capacity(WRITE_BUFFER, inner),
            scratch: BytesMut::with_capacity(4096),
            chunks: Vec::new(),
        }
    }

    /// Queues `frame`; large payloads go to the socket directly, without a copy.
    pub async fn write_frame(&mut self, frame: &Frame) -> Result<()> {
        frame.encode(&mut self.scratch, INLINE_LIMIT, &mut self.chunks);
        for chunk in self.chunks.drain(..) {
            self.inner
                .write_all(&chunk)
                .await
                .map_err(|e| PsError::io("write", e))?;
        }
        Ok(())
    }

    /// Sends everything buffered.
    pub async fn flush(&mut self) -> Result<()> {
        self.inner
            .flush()
            .await
            .map_err(|e| PsError::io("write", e))
    }

    /// Flushes and closes the write side.
    pub async fn shutdown(&mut self) -> Result<()> {
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
