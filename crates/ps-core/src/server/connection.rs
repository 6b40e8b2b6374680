//! One worker's connection to a server: a reader task that parses and dispatches requests, and a
//! writer task that sends replies (some complete later, from other workers' pushes).

use std::sync::Arc;

use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use super::Shared;
use super::handlers;
use crate::protocol::connection::{FrameReader, FrameWriter};
use crate::protocol::frame::Frame;

/// Serves one authenticated connection until the peer leaves, sends garbage, or `stop` is set.
pub(crate) async fn run(shared: Arc<Shared>, stream: TcpStream, mut stop: watch::Receiver<bool>) {
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".into());
    let (read_half, write_half) = stream.into_split();
    let (outbox, mut replies) = mpsc::unbounded_channel::<Frame>();
    let writer = tokio::spawn(async move {
        let mut w = FrameWriter::new(write_half);
        while let Some(frame) = replies.recv().await {
            if w.write_frame(&frame).await.is_err() {
                return;
            }
            while let Ok(frame) = replies.try_recv() {
                if w.write_frame(&frame).await.is_err() {
                    return;
                }
            }
            if w.flush().await.is_err() {
                return;
            }
        }
    });

    let mut reader = FrameReader::new(read_half, shared.max_frame);
    let mut worker: Option<u32> = None;
    loop {
        let frame = tokio::select! {
            f = reader.read_frame() => f,
            _ = stop.changed() => break,
        };
        match frame {
            Ok(Some(frame)) => {
                if let Err(e) = handlers::dispatch(&shared, &mut worker, frame, &outbox) {
                    tracing::warn!("closing connection from {peer}: {e}");
                    break;
                }
            }
            Ok(None) => {
                tracing::debug!("connection from {peer} closed");
                break;
            }
            Err(e) => {
                tracing::warn!("closing connection from {peer}: {e}");
                break;
            }
        }
    }
    // Replies still parked on keys hold outbox clones; the peer is gone, so stop writing now.
    writer.abort();
}
