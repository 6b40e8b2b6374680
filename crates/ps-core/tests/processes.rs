//! Whole jobs with the real binaries: `ps-scheduler`, `ps-server` and `ps-bench` worker
//! processes on 127.0.0.1, plus workers driven from the test itself.

mod common;

use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::*;
use ps_core::node::JobWorker;
use ps_core::protocol::frame::Mode;
use ps_core::{Config, DType, PsError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A free port for a job's scheduler. A port from binding port 0 comes from the ephemeral range,
/// where the servers of the tests running beside this one take theirs between this check and the
/// scheduler's own bind; a port below that range that is free now is not raced that way.
fn scheduler_port() -> u16 {
    loop {
        let port = 20_000 + rand::random::<u16>() % 12_000;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Kills the processes it started when dropped (a failing test leaves nothing behind).
struct Job {
    secret: String,
    children: Vec<(String, Child)>,
    env: Vec<(String, String)>,
}

impl Job {
    fn new(workers: u32, servers: u32, extra: &[(&str, &str)]) -> Job {
        let port = scheduler_port();
        let secret = format!("secret-{port}");
        let mut env: Vec<(String, String)> = vec![
            ("DMLC_PS_ROOT_URI".into(), "127.0.0.1".into()),
            ("DMLC_PS_ROOT_PORT".into(), port.to_string()),
            ("DMLC_NUM_SERVER".into(), servers.to_string()),
            ("DMLC_NUM_WORKER".into(), workers.to_string()),
            ("DMLC_NODE_HOST".into(), "127.0.0.1".into()),
            ("PS_HEARTBEAT_INTERVAL".into(), "0.2".into()),
            ("PS_HEARTBEAT_TIMEOUT".into(), "2".into()),
        ];
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Job {
            secret,
            children: Vec::new(),
            env,
        }
    }

    fn spawn(&mut self, name: &str, exe: &str, args: &[&str], env: &[(&str, &str)]) {
        let mut cmd = Command::new(exe);
        cmd.args(args)
            .env("MXRS_SECRET", &self.secret)
            .stdout(Stdio::null());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        self.children.push((name.to_string(), cmd.spawn().unwrap()));
    }

    fn scheduler(&mut self) {
        self.spawn("scheduler", env!("CARGO_BIN_EXE_ps-scheduler"), &[], &[]);
    }

    fn server(&mut self, name: &str, env: &[(&str, &str)]) {
        self.spawn(name, env!("CARGO_BIN_EXE_ps-server"), &[], env);
    }

    fn bench_worker(&mut self, name: &str, rounds: u32, env: &[(&str, &str)]) {
        let rounds = rounds.to_string();
        let args = [
            "--worker",
            "--rounds",
            rounds.as_str(),
            "--bytes",
            "4096",
            "--keys",
            "3",
        ];
        self.spawn(name, env!("CARGO_BIN_EXE_ps-bench"), &args, env);
    }

    fn config(&self, worker_id: Option<u32>) -> Config {
        let mut cfg = Config::from_lookup(|k| {
            self.env
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        })
        .unwrap();
        cfg.secret = Some(self.secret.clone().into_bytes());
        cfg.worker_id = worker_id;
        cfg
    }

    fn kill(&mut self, name: &str) {
        let (_, child) = self.children.iter_mut().find(|(n, _)| n == name).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Waits for `name` to exit, within the hard limit.
    fn wait(&mut self, name: &str) -> ExitStatus {
        let (_, child) = self.children.iter_mut().find(|(n, _)| n == name).unwrap();
        let deadline = Instant::now() + LIMIT;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "{name} did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        for (_, child) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

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
    let mut s = ps_core::protocol::transport::connect(addr, Some(job.secret.as_bytes()))
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
    // Same keys as the victim (ps-bench: keys 0..3 of 1024 float32 each).
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
