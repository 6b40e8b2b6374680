//! The metrics endpoint: `GET /metrics` over HTTP/1.1, nothing else.
//!
//! What a client can make it hold is bounded: [`MAX_CLIENTS`] connections at once (others wait
//! in the listen backlog), each closed after [`CLIENT_TIMEOUT`] whatever it is doing, and one
//! request per connection; a request's body is never read.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// The media type of the answer: the OpenMetrics text format.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Connections served at once.
const MAX_CLIENTS: usize = 8;
/// How long one connection may last.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `render()`'s text on `GET /metrics` to whoever connects to `listener`, until
/// `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    render: Arc<dyn Fn() -> String + Send + Sync>,
    shutdown: impl Future<Output = ()>,
) {
    let clients = Arc::new(Semaphore::new(MAX_CLIENTS));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = clients.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
            _ = &mut shutdown => return,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!("metrics endpoint: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => return,
        };
        let render = render.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let answer = respond(&req, render.as_ref());
                async move { Ok::<_, Infallible>(answer) }
            });
            let conn = http1::Builder::new()
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service);
            match tokio::time::timeout(CLIENT_TIMEOUT, conn).await {
                Ok(Err(e)) => tracing::debug!("metrics endpoint: {e}"),
                Err(_) => {
                    tracing::debug!("metrics endpoint: a client took over {CLIENT_TIMEOUT:?}")
                }
                Ok(Ok(())) => {}
            }
            drop(permit);
        });
    }
}

/// The answer to one request.
fn respond(
    req: &Request<Incoming>,
    render: &(dyn Fn() -> String + Send + Sync),
) -> Response<Full<Bytes>> {
    let plain = |status: StatusCode, text: &'static str| {
        let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
        *r.status_mut() = status;
        r
    };
    if req.uri().path() != "/metrics" {
        return plain(
            StatusCode::NOT_FOUND,
            "not found: the metrics are at /metrics\n",
        );
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "only GET /metrics\n");
    }
    let body = match req.method() == Method::HEAD {
        true => Bytes::new(),
        false => Bytes::from(render()),
    };
    let mut r = Response::new(Full::new(body));
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(CONTENT_TYPE),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn ask(addr: std::net::SocketAddr, request: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn serves_metrics_and_refuses_the_rest() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(
            listener,
            Arc::new(|| "mxrs_up 1\n# EOF\n".to_string()),
            async {
                let _ = stopped.await;
            },
        ));
        let ok = ask(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(ok.contains("application/openmetrics-text"), "{ok}");
        assert!(ok.ends_with("mxrs_up 1\n# EOF\n"), "{ok}");
        let missing = ask(addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
        let post = ask(addr, "POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(post.starts_with("HTTP/1.1 405"), "{post}");
        // Garbage is answered with an error or a hang-up, and the endpoint carries on.
        let _ = ask(addr, "\x00\x01 not http at all\r\n\r\n").await;
        let again = ask(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(again.starts_with("HTTP/1.1 200"), "{again}");
        stop.send(()).unwrap();
        server.await.unwrap();
    }
}
