//! A peer that knows the job's secret cannot fill a server's memory: whole server processes on
//! 127.0.0.1, their peak memory read from `/proc`, a well-behaved worker checking its values
//! throughout.

mod common;
mod jobs;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use common::*;
use jobs::{Job, peak_rss};
use ps_core::config::Role;
use ps_core::node::JobWorker;
use ps_core::placement::PIECE_BYTES;
use ps_core::protocol::connection::FrameWriter;
use ps_core::protocol::frame::{Entry, Frame, Mode, Op};
use ps_core::protocol::transport::{self, Credentials, LinkWrite};
use ps_core::scheduler::ControlClient;
use ps_core::updater::OptimizerSpec;
use ps_core::{Config, DType};
use tokio::io::AsyncWriteExt;

const MB: u64 = 1 << 20;

/// Worker 0 as a real client, and worker `1..=others` registered with the scheduler only, so
/// that their data-plane connections can be driven by hand.
async fn join(job: &Job, others: u32, mode: Mode) -> (JobWorker, Vec<ControlClient>, SocketAddr) {
    let cfg = job.config(Some(0));
    let registered: Vec<_> = (1..=others)
        .map(|rank| {
            let mut cfg = job.config(Some(rank));
            cfg.worker_id = Some(rank);
            tokio::spawn(async move {
                ControlClient::join(&cfg, Role::Worker, "127.0.0.1", 0)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let me = within(JobWorker::join(&cfg, mode)).await.unwrap();
    let mut clients = Vec::new();
    for r in registered {
        clients.push(within(r).await.unwrap());
    }
    let addr = me.worker().server_names()[0]
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    (me, clients, addr)
}

/// An authenticated data-plane connection that said hello as worker `rank`.
async fn hand_driven(
    addr: SocketAddr,
    cfg: &Config,
    rank: u64,
    mode: Mode,
) -> FrameWriter<LinkWrite> {
    let stream = transport::connect(addr, &Credentials::secret(cfg.secret.as_deref()))
        .await
        .unwrap();
    let (r, w) = stream.into_split();
    // The reading half is kept open and never read: replies pile up on the server's side.
    std::mem::forget(r);
    let mut w = FrameWriter::new(w);
    let hello = Entry {
        key: rank,
        round: mode.code(),
        count: cfg.num_workers as u64,
        ..Entry::new(0, DType::F32, &[], 0, 0)
    };
    w.write_frame(&Frame::request(Op::Hello, 1, vec![hello]))
        .await
        .unwrap();
    w.flush().await.unwrap();
    w
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_never_reads_its_replies_is_stopped_not_served() {
    let mut job = Job::new(2, 1, &[]);
    job.scheduler();
    job.server("server", &[]);
    let (me, _others, addr) = join(&job, 1, Mode::Async).await;
    let w = me.worker();
    // An 8 MiB float16 key (each reply used to be a fresh copy) and a small one.
    let half = 4 << 20;
    let items = vec![
        (
            1,
            DType::F16,
            vec![half],
            bytes::Bytes::from(vec![0u8; 2 * half as usize]),
        ),
        (2, DType::F32, vec![4], f32s(&[0.0; 4])),
    ];
    within(w.init(items).wait()).await.unwrap();
    let sgd = OptimizerSpec {
        name: "sgd".into(),
        params: vec![("learning_rate".into(), 1.0)],
        key_mults: vec![],
        payload: Vec::new(),
    };
    within(w.set_optimizer(&sgd)).await.unwrap();
    let before = peak_rss(job.pid("server"));

    // Worker 1 asks for the big key (its 1 MiB pieces) 40 times, 320 MiB of answers it never
    // reads, then pushes 1000 to the small key.
    let mut flood = hand_driven(addr, &job.config(Some(1)), 1, Mode::Async).await;
    let piece = PIECE_BYTES / 2;
    for id in 0..40 {
        let pulls = (0..half / piece)
            .map(|i| Entry::new(1, DType::F16, &[half], i * piece, piece))
            .collect();
        flood
            .write_frame(&Frame::request(Op::Pull, 10 + id, pulls))
            .await
            .unwrap();
    }
    let mut push = Entry::new(2, DType::F32, &[4], 0, 4);
    push.payload = f32s(&[1000.0; 4]);
    flood
        .write_frame(&Frame::request(Op::Push, 200, vec![push]))
        .await
        .unwrap();
    flood.flush().await.unwrap();

    // Worker 0 trains on for a while (a server that reads everything gets through the flood in
    // a second or two, even built for debugging): its values stay right, and the flood's push
    // never shows.
    let mut seen_flood = false;
    let start = std::time::Instant::now();
    for round in 1.. {
        if start.elapsed() > std::time::Duration::from_secs(6) {
            break;
        }
        within(w.push(vec![(2, DType::F32, f32s(&[1.0; 4]))]).wait())
            .await
            .unwrap();
        let v = to_f32(&within(w.pull(&[2]).wait()).await.unwrap()[0]);
        if v == [-(round as f32) - 1000.0; 4] {
            seen_flood = true;
            break;
        }
        assert_eq!(v, [-(round as f32); 4]);
    }
    let grown = peak_rss(job.pid("server")).saturating_sub(before);
    assert!(grown < 150 * MB, "the server grew by {} MiB", grown / MB);
    assert!(
        !seen_flood,
        "the server read every request of a peer that reads no reply"
    );
    drop(flood);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_announcing_huge_frames_get_the_in_flight_budget_one_at_a_time() {
    let budget = 256 * MB;
    let mut job = Job::new(1, 1, &[("MXRS_MAX_INFLIGHT_BYTES", "268435456")]);
    job.scheduler();
    job.server("server", &[]);
    let (me, _, addr) = join(&job, 0, Mode::Sync).await;
    let w = me.worker();
    within(
        w.init(vec![(1, DType::F32, vec![4], f32s(&[0.0; 4]))])
            .wait(),
    )
    .await
    .unwrap();
    let before = peak_rss(job.pid("server"));
    let creds = Credentials::secret(Some(job.secret.as_bytes()));

    // A 2 GiB frame is over the limit (the budget caps frames too): closed at once.
    let mut s = transport::connect(addr, &creds).await.unwrap();
    s.write_all(&(2u32 << 30).to_le_bytes()).await.unwrap();
    let mut sink = Vec::new();
    within(tokio::io::AsyncReadExt::read_to_end(&mut s, &mut sink))
        .await
        .ok();

    // Four peers announce 200 MiB frames and send all but their last byte.
    let frame = 200 * MB;
    let sent: Vec<Arc<AtomicU64>> = (0..4).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let mut floods = Vec::new();
    for counter in &sent {
        let counter = counter.clone();
        let creds = creds.clone();
        floods.push(tokio::spawn(async move {
            let mut s = transport::connect(addr, &creds).await.unwrap();
            s.write_all(&((frame - 4) as u32).to_le_bytes())
                .await
                .unwrap();
            let chunk = vec![0u8; MB as usize];
            let mut left = frame - 5;
            while left > 0 {
                let n = left.min(MB);
                s.write_all(&chunk[..n as usize]).await.unwrap();
                left -= n;
                counter.fetch_add(n, Ordering::Relaxed);
            }
            s // kept open: the frame never ends
        }));
    }
    // Wait until one of them has sent its whole frame: the server read it.
    within(async {
        while !sent.iter().any(|c| c.load(Ordering::Relaxed) == frame - 5) {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    // The well-behaved worker is still served, with the right values.
    for round in 1..=20 {
        within(
            w.push(vec![(1, DType::F32, f32s(&[round as f32; 4]))])
                .wait(),
        )
        .await
        .unwrap();
        let v = to_f32(&within(w.pull(&[1]).wait()).await.unwrap()[0]);
        assert_eq!(v, [round as f32; 4]);
    }
    let total: u64 = sent.iter().map(|c| c.load(Ordering::Relaxed)).sum();
    let grown = peak_rss(job.pid("server")).saturating_sub(before);
    assert!(
        grown < budget + 64 * MB,
        "the server grew by {} MiB with {} MiB sent to it",
        grown / MB,
        total / MB
    );
    assert!(total < 2 * frame, "{} MiB were read", total / MB);
    for f in floods {
        f.abort();
    }
}
