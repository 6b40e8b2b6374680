//! Whole jobs with the real binaries: `ps-scheduler`, `ps-server` and worker processes
//! (`jobs::worker_process`) on 127.0.0.1, plus workers driven from the test itself.

mod common;
mod jobs;

use std::time::{Duration, Instant};

use common::*;
use jobs::{Job, output_within};
use ps_core::node::JobWorker;
use ps_core::protocol::frame::Mode;
use ps_core::protocol::transport::{self, Credentials};
use ps_core::{DType, PsError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[test]
fn a_normal_job_exits_zero_everywhere() {
    let mut job = Job::new(2, 2, &[]);
    job.scheduler();
    job.server("server a", &[]);
    job.server("server b", &[]);
    // The workers check every value they pull and fail otherwise.
    job.bench_worker("worker a", 20, &[]);
    job.bench_worker("worker b", 20, &[]);
    for name in ["worker a", "worker b", "server a", "server b", "scheduler"] {
        let status = job.wait(name);
        assert!(status.success(), "{name} exited with {status}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduler_on_port_zero_announces_the_port_it_listens_on() {
    let mut job = Job::new(1, 1, &[]);
    let port = job.scheduler();
    assert_ne!(port, 0);
    // What listens there knows the job's secret: the scheduler itself, listening already.
    let addr = ([127, 0, 0, 1], port).into();
    within(transport::connect(
        addr,
        &Credentials::secret(Some(job.secret.as_bytes())),
    ))
    .await
    .unwrap();
    // And the job forms and runs on that port.
    job.server("server", &[]);
    job.bench_worker("worker", 5, &[]);
    for name in ["worker", "server", "scheduler"] {
        let status = job.wait(name);
        assert!(status.success(), "{name} exited with {status}");
    }
}

/// Peers connect to a server as soon as the job forms: its Unix socket for processes of its
/// host is there before it joins, so none of them finds it missing and falls back to TCP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_offers_its_unix_socket_before_the_job_forms() {
    let mut job = Job::new(1, 1, &[]);
    job.scheduler();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    job.server("server", &[("MXRS_PORT", &port.to_string())]);
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    // The server listens (and waits for the job to form: no worker has joined).
    within(async {
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let creds = Credentials::secret(Some(job.secret.as_bytes()));
    // Waits in the Unix socket's backlog until the server serves, once the job has formed.
    let early = tokio::spawn(async move { transport::connect(addr, &creds).await });
    let joined = within(JobWorker::join(&job.config(None), Mode::Sync))
        .await
        .unwrap();
    let link = within(early).await.unwrap().unwrap();
    assert!(
        link.is_local(),
        "a peer of this host reached the server over TCP"
    );
    drop(link);
    within(joined.finish()).await.unwrap();
    assert!(job.wait("server").success());
    assert!(job.wait("scheduler").success());
}

#[test]
fn a_scheduler_that_cannot_announce_its_port_stops_at_once_naming_the_setting() {
    let job = Job::new(1, 1, &[]);
    let dir = std::env::temp_dir().join(format!("mxrs-announce-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir_arg = dir.to_str().unwrap();
    let cases: [(&[&str], String); 3] = [
        // A descriptor the launcher never passed.
        (
            &["--announce", "/dev/fd/9999"],
            "ps-scheduler: MXRS_ANNOUNCE: cannot open /dev/fd/9999 to announce".into(),
        ),
        (
            &["--announce", dir_arg],
            format!("ps-scheduler: MXRS_ANNOUNCE: cannot open {dir_arg} to announce"),
        ),
        // Any free port, and nobody told which.
        (
            &[],
            "ps-scheduler: DMLC_PS_ROOT_PORT: 0 (any free port) needs MXRS_ANNOUNCE".into(),
        ),
    ];
    for (args, said) in cases {
        let cmd = job.command(env!("CARGO_BIN_EXE_ps-scheduler"), args, &[]);
        let out = output_within(cmd, "ps-scheduler");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with(&said), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    std::fs::remove_dir(&dir).unwrap();
}

#[tokio::test]
async fn port_zero_is_refused_to_a_worker_and_a_server() {
    let job = Job::new(1, 1, &[]); // no scheduler started: DMLC_PS_ROOT_PORT is still 0
    let said = "DMLC_PS_ROOT_PORT: 0 is not the scheduler's port";
    let err = within(JobWorker::join(&job.config(None), Mode::Sync))
        .await
        .err()
        .unwrap();
    assert!(err.to_string().starts_with(said), "{err}");
    let cmd = job.command(env!("CARGO_BIN_EXE_ps-server"), &[], &[]);
    let out = output_within(cmd, "ps-server");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with(&format!("ps-server: {said}")), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_secret_and_garbage_leave_the_job_running() {
    let mut job = Job::new(1, 1, &[]);
    job.scheduler();
    job.server("server", &[]);

    // A worker with the wrong secret is refused by the scheduler.
    let mut bad = job.config(None);
    bad.secret = Some(b"not the secret".to_vec());
    let err = within(JobWorker::join(&bad, Mode::Sync))
        .await
        .err()
        .unwrap();
    assert!(matches!(err, PsError::Auth(_)), "{err}");

    let good = within(JobWorker::join(&job.config(None), Mode::Sync))
        .await
        .unwrap();
    let w = good.worker();
    // Garbage on the server's data port, without and with a handshake.
    let addr = w.server_names()[0]
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(&[0x5A; 10_000]).await.unwrap();
    let mut sink = Vec::new();
    within(s.read_to_end(&mut sink)).await.ok();
    let mut s = transport::connect(addr, &Credentials::secret(Some(job.secret.as_bytes())))
        .await
        .unwrap();
    s.write_all(&[0xFF; 64]).await.unwrap();
    within(s.read_to_end(&mut sink)).await.ok();

    within(
        w.init(vec![(1, DType::F32, vec![2], f32s(&[1.0, 2.0]))])
            .wait(),
    )
    .await
    .unwrap();
    within(w.push(vec![(1, DType::F32, f32s(&[3.0, 4.0]))]).wait())
        .await
        .unwrap();
    let v = within(w.pull(&[1]).wait()).await.unwrap();
    assert_eq!(to_f32(&v[0]), [3.0, 4.0]);
    within(good.finish()).await.unwrap();
    assert!(job.wait("server").success());
    assert!(job.wait("scheduler").success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_fails_the_others_pull_naming_it() {
    let mut job = Job::new(2, 2, &[]);
    job.scheduler();
    job.server("server a", &[]);
    job.server("server b", &[]);
    job.bench_worker("victim", 1_000_000, &[("DMLC_WORKER_ID", "1")]);
    let me = within(JobWorker::join(&job.config(Some(0)), Mode::Sync))
        .await
        .unwrap();
    let w = me.worker();
    assert_eq!(w.rank(), 0);
    // Same keys as the victim (keys 0..3 of 1024 float32 each).
    let keys = [0u64, 1, 2];
    let zeros = f32s(&[0.0; 1024]);
    let items = keys
        .iter()
        .map(|&k| (k, DType::F32, vec![1024], zeros.clone()))
        .collect();
    within(w.init(items).wait()).await.unwrap();
    within(me.barrier()).await.unwrap();
    // Train in lockstep with the victim for a few rounds.
    let grad = f32s(&[1.0; 1024]);
    for _ in 0..5 {
        let items = keys
            .iter()
            .map(|&k| (k, DType::F32, grad.clone()))
            .collect();
        within(w.push(items).wait()).await.unwrap();
        let v = within(w.pull(&keys).wait()).await.unwrap();
        assert_eq!(to_f32(&v[0])[0], 3.0);
    }
    job.kill("victim");
    let start = Instant::now();
    let err = loop {
        let items = keys
            .iter()
            .map(|&k| (k, DType::F32, grad.clone()))
            .collect();
        let pushed = w.push(items).wait().await;
        match pushed.and(Ok(w.pull(&keys))) {
            Ok(pull) => match within(pull.wait()).await {
                Ok(_) => continue, // the victim's last push may still complete a round
                Err(e) => break e,
            },
            Err(e) => break e,
        }
    };
    let msg = err.to_string();
    assert!(matches!(err, PsError::NodeLost(_)), "{msg}");
    assert!(msg.contains("worker 1"), "{msg}");
    assert!(
        start.elapsed() < Duration::from_secs(2) + Duration::from_millis(1500),
        "{:?}",
        start.elapsed()
    );
    // The barrier fails too, naming the node, instead of hanging.
    let err = within(me.barrier()).await.unwrap_err();
    assert!(err.to_string().contains("worker 1"), "{err}");
    drop(me);
    // The job failed: servers and scheduler end, not zero.
    for name in ["server a", "server b", "scheduler"] {
        let status = job.wait(name);
        assert!(!status.success(), "{name} exited with {status}");
    }
}
