//! Whole jobs of real processes for the integration tests: the `ps-scheduler` and `ps-server`
//! binaries and worker processes on 127.0.0.1, started with one environment and killed when
//! dropped.
//!
//! A worker process is this test binary itself, run as the single test [`worker_process`] with
//! [`WORKER_ROUNDS`] set: it trains a few keys in lockstep with the others and checks every value
//! it pulls, failing (exit status 101) on anything wrong.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ps_core::node::JobWorker;
use ps_core::protocol::frame::Mode;
use ps_core::{Config, DType};

use crate::common::{LIMIT, f32s, to_f32};

/// Set in a worker process started by [`Job::bench_worker`]: the rounds it trains.
pub const WORKER_ROUNDS: &str = "MXRS_TEST_WORKER_ROUNDS";
/// Keys a worker process trains (float32, [`WORKER_NUMEL`] elements each).
pub const WORKER_KEYS: u64 = 3;
/// Elements of each key a worker process trains.
pub const WORKER_NUMEL: usize = 1024;

/// Kills the processes it started when dropped (a failing test leaves nothing behind).
pub struct Job {
    pub secret: String,
    children: Vec<(String, Child)>,
    env: Vec<(String, String)>,
}

impl Job {
    pub fn new(workers: u32, servers: u32, extra: &[(&str, &str)]) -> Job {
        let secret = format!("secret-{:016x}", rand::random::<u64>());
        // Port 0 until the scheduler announces the one it got (see `scheduler`).
        let mut env: Vec<(String, String)> = vec![
            ("DMLC_PS_ROOT_URI".into(), "127.0.0.1".into()),
            ("DMLC_PS_ROOT_PORT".into(), "0".into()),
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

    /// A command with the job's environment and secret, its output thrown away.
    pub fn command(&self, exe: &str, args: &[&str], env: &[(&str, &str)]) -> Command {
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
        cmd
    }

    pub fn spawn(&mut self, name: &str, exe: &str, args: &[&str], env: &[(&str, &str)]) {
        let child = self.command(exe, args, env).spawn().unwrap();
        self.children.push((name.to_string(), child));
    }

    /// Starts the scheduler on any free port and waits, within the hard limit, for the port it
    /// announces on its stdout (`--announce /dev/stdout`); the processes started after it, and
    /// [`Job::config`], get that port. Returns the port.
    pub fn scheduler(&mut self) -> u16 {
        let exe = env!("CARGO_BIN_EXE_ps-scheduler");
        let mut cmd = self.command(exe, &["--announce", "/dev/stdout"], &[]);
        let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
        let out = child.stdout.take().unwrap();
        self.children.push(("scheduler".into(), child)); // killed on drop if the port never comes
        let port = announced_port(out);
        let var = self
            .env
            .iter_mut()
            .find(|(k, _)| k == "DMLC_PS_ROOT_PORT")
            .unwrap();
        var.1 = port.to_string();
        port
    }

    pub fn server(&mut self, name: &str, env: &[(&str, &str)]) {
        self.spawn(name, env!("CARGO_BIN_EXE_ps-server"), &[], env);
    }

    /// Starts a worker process (see the module's doc) that trains `rounds` rounds.
    pub fn bench_worker(&mut self, name: &str, rounds: u32, env: &[(&str, &str)]) {
        let exe = std::env::current_exe().unwrap();
        let rounds = rounds.to_string();
        let mut env = env.to_vec();
        env.push((WORKER_ROUNDS, &rounds));
        let args = ["--exact", "jobs::worker_process", "--test-threads", "1"];
        self.spawn(name, exe.to_str().unwrap(), &args, &env);
    }

    pub fn config(&self, worker_id: Option<u32>) -> Config {
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

    pub fn kill(&mut self, name: &str) {
        let (_, child) = self.children.iter_mut().find(|(n, _)| n == name).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Waits for `name` to exit, within the hard limit.
    pub fn wait(&mut self, name: &str) -> ExitStatus {
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

impl Job {
    /// The process id of `name`.
    pub fn pid(&self, name: &str) -> u32 {
        self.children
            .iter()
            .find(|(n, _)| n == name)
            .unwrap()
            .1
            .id()
    }
}

/// The peak resident memory of process `pid` so far, in bytes (`VmHWM`).
pub fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// The port a scheduler announced as the first line of `out`, read within the hard limit; a
/// thread reads the rest of `out` until it closes, so the scheduler never writes into a closed
/// pipe.
pub fn announced_port(out: impl Read + Send + 'static) -> u16 {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(out);
        let mut line = String::new();
        let read = reader.read_line(&mut line).map(|_| line);
        let _ = tx.send(read);
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    let line = rx
        .recv_timeout(LIMIT)
        .expect("the scheduler did not announce its port in time")
        .expect("reading the scheduler's announcement");
    assert!(
        line.ends_with('\n'),
        "the scheduler's announcement ended without a whole line: {line:?}"
    );
    line.trim_end()
        .parse()
        .unwrap_or_else(|_| panic!("the scheduler announced {line:?}, not a port"))
}

/// Runs `cmd` to its end within the hard limit (killed past it) and returns its status and
/// output; stdout and stderr go through files, so nothing blocks on a full pipe.
pub fn output_within(mut cmd: Command, name: &str) -> Output {
    let dir = std::env::temp_dir();
    let stem = format!(
        "mxrs-test-{}-{:016x}",
        std::process::id(),
        rand::random::<u64>()
    );
    let (out_path, err_path) = (
        dir.join(format!("{stem}.out")),
        dir.join(format!("{stem}.err")),
    );
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} did not exit within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |path: &std::path::Path| {
        let bytes = std::fs::read(path).unwrap();
        std::fs::remove_file(path).unwrap();
        bytes
    };
    Output {
        status,
        stdout: read(&out_path),
        stderr: read(&err_path),
    }
}

/// A job's worker, when this binary runs as one (see the module's doc); a no-op test otherwise.
#[test]
fn worker_process() {
    let Ok(rounds) = std::env::var(WORKER_ROUNDS) else {
        return;
    };
    let rounds: u32 = rounds.parse().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(train(rounds));
}

/// Pushes `rank + 1` into every key each round and checks that it pulls the sum over all workers.
async fn train(rounds: u32) {
    let cfg = Config::from_env().unwrap();
    let job = JobWorker::join(&cfg, Mode::Sync).await.unwrap();
    let w = job.worker();
    let (rank, nw) = (w.rank(), w.num_workers());
    let keys: Vec<u64> = (0..WORKER_KEYS).collect();
    let zeros = f32s(&[0.0; WORKER_NUMEL]);
    let items = keys
        .iter()
        .map(|&k| (k, DType::F32, vec![WORKER_NUMEL as u64], zeros.clone()))
        .collect();
    w.init(items).wait().await.unwrap();
    job.barrier().await.unwrap();
    let grad = f32s(&[(rank + 1) as f32; WORKER_NUMEL]);
    let expected = (nw * (nw + 1) / 2) as f32;
    for round in 0..rounds {
        let items = keys
            .iter()
            .map(|&k| (k, DType::F32, grad.clone()))
            .collect();
        let push = w.push(items);
        let pull = w.pull(&keys);
        push.wait().await.unwrap();
        for (k, v) in keys.iter().zip(pull.wait().await.unwrap()) {
            let v = to_f32(&v);
            assert!(
                v.iter().all(|&x| x == expected),
                "round {round}, key {k}: {v:?}"
            );
        }
    }
    job.barrier().await.unwrap();
    job.finish().await.unwrap();
}
