//! Whole jobs of real processes for the integration tests: the `ps-scheduler`, `ps-server` and
//! `ps-bench` binaries on 127.0.0.1, started with one environment and killed when dropped.

#![allow(dead_code)]

use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use ps_core::Config;

use crate::common::LIMIT;

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
pub struct Job {
    pub secret: String,
    children: Vec<(String, Child)>,
    env: Vec<(String, String)>,
}

impl Job {
    pub fn new(workers: u32, servers: u32, extra: &[(&str, &str)]) -> Job {
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

    pub fn spawn(&mut self, name: &str, exe: &str, args: &[&str], env: &[(&str, &str)]) {
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

    pub fn scheduler(&mut self) {
        self.spawn("scheduler", env!("CARGO_BIN_EXE_ps-scheduler"), &[], &[]);
    }

    pub fn server(&mut self, name: &str, env: &[(&str, &str)]) {
        self.spawn(name, env!("CARGO_BIN_EXE_ps-server"), &[], env);
    }

    pub fn bench_worker(&mut self, name: &str, rounds: u32, env: &[(&str, &str)]) {
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
