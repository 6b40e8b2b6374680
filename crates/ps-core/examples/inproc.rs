use bytes::Bytes;
use ps_core::DType;
use ps_core::protocol::frame::Mode;
use ps_core::protocol::tls::JobCa;
use ps_core::protocol::transport::{self, Credentials};
use ps_core::server::Server;
use ps_core::worker::{DataPlane, Worker};
use std::time::Instant;

/// One worker and one server in one process, over 127.0.0.1: pushpull rounds at several sizes.
/// `INPROC_TLS=1` runs both ends with mutual TLS.
fn main() {
    let creds = match std::env::var("INPROC_TLS").as_deref() {
        Ok("1") => {
            let ca = JobCa::new("inproc", std::time::Duration::from_secs(3600)).unwrap();
            Credentials::secret(Some(b"inproc")).with_tls(ca.tls_for("node").unwrap())
        }
        _ => Credentials::secret(Some(b"inproc")),
    };
    println!("tls {}", creds.uses_tls());
    let server_creds = creds.clone();
    let srt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        srt.block_on(async {
            let l = transport::listen("127.0.0.1".parse().unwrap(), 0)
                .await
                .unwrap();
            addr_tx.send(l.local_addr().unwrap()).unwrap();
            Server::new(1, 1 << 31)
                .serve(
                    transport::Listeners::new(l, &server_creds),
                    server_creds,
                    std::future::pending::<Option<ps_core::server::Farewell>>(),
                )
                .await
                .unwrap();
        })
    });
    let addr = addr_rx.recv().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let w = Worker::connect(DataPlane {
            servers: vec![(addr, "s".into())],
            rank: 0,
            num_workers: 1,
            mode: Mode::Sync,
            bigarray_bound: u64::MAX,
            max_frame_bytes: 1 << 31,
            creds,
            rejoined: false,
            local: None,
            replicas: 0,
            wait_notice: None,
        })
        .await
        .unwrap();
        for fused in [false, true] {
            println!("fused {fused}");
            for &(bytes, keys, rounds) in &[
                (4096usize, 1u64, 2000u32),
                (4096, 1000, 50),
                (1 << 20, 1, 200),
                (16 << 20, 1, 30),
                (64 << 20, 1, 10),
            ] {
                let n = bytes / 4;
                let data = Bytes::from(vec![0u8; bytes]);
                let ks: Vec<u64> = (0..keys)
                    .map(|k| k + bytes as u64 * 10000 + fused as u64)
                    .collect();
                w.init(
                    ks.iter()
                        .map(|&k| (k, DType::F32, vec![n as u64], data.clone()))
                        .collect(),
                )
                .wait()
                .await
                .unwrap();
                let mut lat = vec![];
                let t = Instant::now();
                for _ in 0..rounds {
                    let t0 = Instant::now();
                    if fused {
                        w.pushpull(ks.iter().map(|&k| (k, DType::F32, data.clone())).collect())
                            .wait()
                            .await
                            .unwrap();
                    } else {
                        let p = w.push(ks.iter().map(|&k| (k, DType::F32, data.clone())).collect());
                        let q = w.pull(&ks);
                        p.wait().await.unwrap();
                        q.wait().await.unwrap();
                    }
                    lat.push(t0.elapsed().as_secs_f64() * 1e6);
                }
                let s = t.elapsed().as_secs_f64();
                lat.sort_by(f64::total_cmp);
                println!(
                    "{bytes}x{keys}: {:.2} GB/s  {:.0} keyops/s  p50 {:.0}us",
                    2.0 * (bytes as f64) * keys as f64 * rounds as f64 / s / 1e9,
                    keys as f64 * rounds as f64 / s,
                    lat[lat.len() / 2]
                );
            }
        }
    });
}
