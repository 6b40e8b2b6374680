//! The connection a primary server replicates over: one that breaks is opened again and its
//! backup gets every piece again, so nothing waits forever; a backup that cannot be reached
//! makes its primary leave the job, naming the backup, instead of hanging.

mod common;

use std::os::fd::AsRawFd;
use std::time::Duration;

use common::*;
use ps_core::DType;
use ps_core::PsError;
use ps_core::protocol::connection::{FrameReader, FrameWriter};
use ps_core::protocol::frame::{Entry, Frame, Mode, Op};
use ps_core::protocol::transport;

/// Two workers pushpull `g` into key 1 (one element per server: keys above the bound of 1 are
/// cut over both); returns the values worker 0 got.
async fn round(workers: &[ps_core::worker::Worker], g: f32) -> Vec<f32> {
    let tickets: Vec<_> = workers
        .iter()
        .map(|w| w.pushpull(vec![(1, DType::F32, f32s(&[g; 2]))]))
        .collect();
    let mut out = Vec::new();
    for t in tickets {
        out.push(to_f32(&within(t.wait()).await.unwrap()[0]));
    }
    assert_eq!(out[0], out[1]);
    out.swap_remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_replication_connection_is_opened_again_then_given_up_on() {
    // Server 0 reaches server 1, the backup of its keys, through a proxy the test controls.
    let proxy = Proxy::bind().await;
    let via = proxy.addr;
    let peers = move |me: usize, addrs: &[(std::net::SocketAddr, String)]| {
        let mut out = addrs.to_vec();
        if me == 0 {
            out[1].0 = via;
        }
        out
    };
    let give_up = Duration::from_millis(500);
    let mut servers = Servers::start_replicated_via(2, 2, Mode::Sync, 1, give_up, &peers).await;
    proxy.forward_to(servers.addrs[1].0);
    let mut workers = Vec::new();
    for rank in 0..2 {
        let mut p = servers.plane(rank, 2, Mode::Sync, 1);
        p.replicas = 1;
        workers.push(within(ps_core::worker::Worker::connect(p)).await.unwrap());
    }
    for w in &workers {
        let init = w.init(vec![(1, DType::F32, vec![2], f32s(&[0.0; 2]))]);
        within(init.wait()).await.unwrap();
    }
    assert_eq!(round(&workers, 1.0).await, [2.0, 2.0]);
    // What server 0 sends its backup is lost on the way, then the connection breaks: it is
    // opened again, the backup gets everything again, and the round is answered.
    // (Without an optimizer a round's value is the sum of its pushes.)
    proxy.stall();
    let tickets: Vec<_> = workers
        .iter()
        .map(|w| w.pushpull(vec![(1, DType::F32, f32s(&[2.0; 2]))]))
        .collect();
    proxy.dropped_some().await;
    proxy.cut();
    for t in tickets {
        assert_eq!(to_f32(&within(t.wait()).await.unwrap()[0]), [4.0; 2]);
    }
    for step in 3..=5 {
        let want = 2.0 * step as f32;
        assert_eq!(
            round(&workers, step as f32).await,
            [want, want],
            "round {step}"
        );
    }
    // The backup becomes unreachable: server 0 leaves the job, naming it, within the time
    // it was given (no farewell: its workers keep their requests for a failover).
    proxy.close();
    let _pending: Vec<_> = workers
        .iter()
        .map(|w| w.pushpull(vec![(1, DType::F32, f32s(&[1.0; 2]))]))
        .collect();
    let why = match servers.ended(0).await {
        Err(PsError::NodeLost(why)) => why,
        other => panic!("server 0 should have left, not {other:?}"),
    };
    let backup = &servers.addrs[1].1;
    assert!(
        why.starts_with(&format!(
            "cannot reach {backup}, the backup of its keys, for 500ms ("
        )),
        "{why}"
    );
    assert!(
        why.ends_with("this server leaves the job so that its keys move to their backups"),
        "{why}"
    );
}

/// A connection from a would-be primary (server rank 1) to server 0: its Hello answered.
async fn primary_link(
    servers: &Servers,
) -> (
    FrameReader<transport::LinkRead>,
    FrameWriter<transport::LinkWrite>,
) {
    let stream = within(transport::connect(servers.addrs[0].0, &servers.creds))
        .await
        .unwrap();
    assert!(
        stream.is_local(),
        "a server of this host is reached by its Unix socket"
    );
    let (r, w) = stream.into_split();
    let (mut r, mut w) = (FrameReader::new(r, 1 << 30), FrameWriter::new(w));
    let hello = Entry {
        key: 1,
        round: Mode::Sync.code(),
        count: 2,
        offset: 2, // a server that sends replicas
        ..Entry::new(0, DType::F32, &[], 0, 0)
    };
    let answer = exchange(&mut r, &mut w, Frame::request(Op::Hello, 1, vec![hello])).await;
    answer.unwrap().entries[0].clone().into_result().unwrap();
    (r, w)
}

async fn exchange(
    r: &mut FrameReader<transport::LinkRead>,
    w: &mut FrameWriter<transport::LinkWrite>,
    frame: Frame,
) -> Option<Frame> {
    w.write_frame(&frame).await.ok()?;
    w.flush().await.ok()?;
    within(r.read_frame()).await.ok().flatten()
}

/// Shared memory offered to a backup, with the offer's process, descriptor and token.
fn offer(pid: u32, fd: i32, size: usize, token: [u8; mxrs_shm::TOKEN]) -> Frame {
    let e = Entry {
        key: pid.into(),
        offset: fd as u64,
        count: size as u64,
        payload: token.to_vec().into(),
        ..Entry::new(0, DType::F32, &[], 0, 0)
    };
    Frame::request(Op::Arena, 2, vec![e])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_memory_a_backup_cannot_trust_is_refused_and_a_bad_region_ends_only_its_connection()
{
    let servers = Servers::start_replicated(2, 2, 1, Mode::Sync, 1).await;
    let pid = std::process::id();
    // A file whose size anyone holding it may change: refused, and the link goes on.
    let plain = std::fs::File::open("/proc/self/exe").unwrap();
    let (mut r, mut w) = primary_link(&servers).await;
    let answer = exchange(&mut r, &mut w, offer(pid, plain.as_raw_fd(), 4096, [0; 16])).await;
    let err = answer.unwrap().entries[0]
        .clone()
        .into_result()
        .unwrap_err();
    assert!(err.to_string().contains("its size is not sealed"), "{err}");
    // A descriptor that is not there.
    let answer = exchange(&mut r, &mut w, offer(pid, 1 << 20, 4096, [0; 16])).await;
    let err = answer.unwrap().entries[0]
        .clone()
        .into_result()
        .unwrap_err();
    assert!(
        err.to_string().contains(&format!("/proc/{pid}/fd/")),
        "{err}"
    );
    // Shared memory as a primary makes it, but with another token: refused.
    let mut arena = mxrs_shm::Arena::create(1 << 16).unwrap();
    let (fd, size) = (arena.fd(), arena.size());
    let answer = exchange(&mut r, &mut w, offer(pid, fd, size, [7; 16])).await;
    let err = answer.unwrap().entries[0]
        .clone()
        .into_result()
        .unwrap_err();
    assert!(err.to_string().contains("not the sender's"), "{err}");
    // With its own token: taken.
    let answer = exchange(&mut r, &mut w, offer(pid, fd, size, arena.token())).await;
    answer.unwrap().entries[0].clone().into_result().unwrap();
    // A piece whose value lies outside it: the connection is closed, nothing is stored.
    let start = arena.put(&[0; 64]).unwrap();
    let mut value = Entry::new(9, DType::F32, &[16], 0, 16);
    value.payload = mxrs_shm::region(start + (1 << 16), 64);
    let mut meta = value.clone();
    meta.payload = vec![0; 16].into();
    let bad = Frame::request(Op::ReplicateShared, 3, vec![value, meta]);
    assert!(
        exchange(&mut r, &mut w, bad).await.is_none(),
        "answered a bad region"
    );
    // The servers go on.
    let workers = servers.workers(2, Mode::Sync, 1).await;
    for w in &workers {
        let init = vec![(1, DType::F32, vec![2], f32s(&[0.0; 2]))];
        within(w.init(init).wait()).await.unwrap();
    }
    assert_eq!(round(&workers, 1.5).await, [3.0; 2]);
}
