//! Connections the scheduler can cut.
//!
//! At shutdown tonic closes connections gracefully: it waits for every open call to end and for
//! each peer to acknowledge the close. A peer that is frozen (stopped, or on a dead machine)
//! never acknowledges, and the scheduler would wait forever. So every accepted connection is
//! wrapped in [`Closable`], which reads end-of-stream and refuses writes once its [`Closer`]
//! fires or is dropped; the connection's task then ends at once.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use tonic::transport::server::Connected;

/// Cuts every [`Closable`] made from it, when told to or when dropped.
pub(crate) struct Closer(watch::Sender<bool>);

impl Closer {
    pub fn new() -> Closer {
        Closer(watch::channel(false).0)
    }

    /// Something that wraps connections so that this closer cuts them.
    pub fn wrapper(&self) -> Wrapper {
        Wrapper(self.0.subscribe())
    }

    /// Cuts every connection wrapped so far or later.
    pub fn close(&self) {
        self.0.send_replace(true);
    }
}

/// Wraps connections for a [`Closer`]; cheap to clone.
#[derive(Clone)]
pub(crate) struct Wrapper(watch::Receiver<bool>);

impl Wrapper {
    /// Wraps `io` so that [`Closer::close`] cuts it.
    pub fn wrap<IO>(&self, io: IO) -> Closable<IO> {
        let mut rx = self.0.clone();
        Closable {
            io,
            cut: Some(Box::pin(async move {
                let _ = rx.wait_for(|cut| *cut).await;
            })),
        }
    }
}

/// A connection that a [`Closer`] can cut.
pub(crate) struct Closable<IO> {
    io: IO,
    /// Resolves when the connection is to be cut; `None` once it has been.
    cut: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl<IO> Closable<IO> {
    /// Whether the connection has been cut; registers the task to hear when it is.
    fn is_cut(&mut self, cx: &mut Context<'_>) -> bool {
        match &mut self.cut {
            None => true,
            Some(fut) => {
                if fut.as_mut().poll(cx).is_ready() {
                    self.cut = None;
                    true
                } else {
                    false
                }
            }
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Closable<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.is_cut(cx) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

fn cut_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::BrokenPipe,
        "connection closed by the scheduler",
    )
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Closable<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.is_cut(cx) {
            return Poll::Ready(Err(cut_error()));
        }
        Pin::new(&mut this.io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.is_cut(cx) {
            return Poll::Ready(Err(cut_error()));
        }
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

impl<IO: Connected> Connected for Closable<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn close_cuts_a_pending_read_and_later_writes() {
        let closer = Closer::new();
        let (a, mut b) = tokio::io::duplex(64);
        let mut a = closer.wrapper().wrap(a);
        b.write_all(b"hi").await.unwrap();
        let mut buf = [0u8; 2];
        a.read_exact(&mut buf).await.unwrap();
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 8];
            let n = a.read(&mut buf).await.unwrap();
            (n, a)
        });
        tokio::task::yield_now().await;
        closer.close();
        let (n, mut a) = reader.await.unwrap();
        assert_eq!(n, 0, "a cut connection reads end-of-stream");
        assert!(a.write_all(b"x").await.is_err());
    }

    #[tokio::test]
    async fn dropping_the_closer_cuts_too() {
        let closer = Closer::new();
        let (a, _b) = tokio::io::duplex(64);
        let mut a = closer.wrapper().wrap(a);
        drop(closer);
        let mut buf = [0u8; 8];
        assert_eq!(a.read(&mut buf).await.unwrap(), 0);
    }
}
