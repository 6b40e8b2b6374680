//! `ps-bench`: load generator for the parameter server.
//!
//! For every run it starts a whole job on 127.0.0.1: the `ps-scheduler` and `ps-server` binaries
//! of ps-core, found beside this one (`cargo build --release -p ps-core -p ps-bench` puts them
//! there), and W worker processes of its own. Each worker pushes and pulls its keys for a number
//! of rounds and checks every value it pulls; ps-bench prints one JSON line per run: GB/s per
//! worker (push + pull bytes), key-ops/s per worker (a key pushed and pulled is one key-op), and
//! p50/p99 round latency.
//!
//! ```text
//! ps-bench --workers 2 --servers 2 --runs 4096,1048576,16777216,4096x1000 --rounds 50
//! ```

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::{Parser, ValueEnum};
use ps_core::node::JobWorker;
use ps_core::protocol::frame::Mode;
use ps_core::protocol::tls::JobCa;
use ps_core::updater::OptimizerSpec;
use ps_core::{Config, DType};
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
enum ModeArg {
    Sync,
    Async,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
enum OpArg {
    /// A push and a pull per key per round, both in flight at once.
    PushPull,
    /// One pushpull request per key per round (one round trip).
    Fused,
}

/// Parameter-server load generator: runs whole jobs on 127.0.0.1 and reports throughput.
#[derive(Parser, Debug, Clone)]
#[command(name = "ps-bench", version)]
struct Args {
    /// Worker processes.
    #[arg(long, default_value_t = 2)]
    workers: u32,
    /// Server processes.
    #[arg(long, default_value_t = 2)]
    servers: u32,
    /// Runs as BYTES or BYTESxKEYS (float32 keys of BYTES each), comma separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "4096,1048576,16777216,4096x1000"
    )]
    runs: Vec<String>,
    /// Measured rounds per run.
    #[arg(long, default_value_t = 30)]
    rounds: u32,
    /// Unmeasured rounds first.
    #[arg(long, default_value_t = 3)]
    warmup: u32,
    #[arg(long, value_enum, default_value_t = ModeArg::Sync)]
    mode: ModeArg,
    #[arg(long, value_enum, default_value_t = OpArg::PushPull)]
    op: OpArg,
    /// Mutual TLS on every link (a CA made for each job, as `mxrs-launch --tls` does).
    #[arg(long)]
    tls: bool,
    /// Internal: run as one worker of a job (settings from DMLC_* variables).
    #[arg(long, hide = true)]
    worker: bool,
    #[arg(long, hide = true, default_value_t = 4096)]
    bytes: u64,
    #[arg(long, hide = true, default_value_t = 1)]
    keys: u64,
}

fn main() {
    let args = Args::parse();
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    let r = if args.worker {
        rt.block_on(worker(&args))
    } else {
        rt.block_on(driver(&args))
    };
    if let Err(e) = r {
        eprintln!("ps-bench: {e}");
        std::process::exit(1);
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn parse_run(run: &str) -> Result<(u64, u64), BoxError> {
    let (bytes, keys) = run.split_once('x').unwrap_or((run, "1"));
    let bytes: u64 = bytes.trim().parse()?;
    let keys: u64 = keys.trim().parse()?;
    if bytes < 4 || !bytes.is_multiple_of(4) || keys == 0 {
        return Err(format!("run '{run}': BYTES must be a positive multiple of 4").into());
    }
    Ok((bytes, keys))
}

async fn driver(args: &Args) -> Result<(), BoxError> {
    let dir: PathBuf = std::env::current_exe()?
        .parent()
        .ok_or("no binary directory")?
        .to_path_buf();
    for run in &args.runs {
        let (bytes, keys) = parse_run(run)?;
        let line = run_job(args, &dir, bytes, keys).await?;
        println!("{line}");
    }
    Ok(())
}

/// Starts the scheduler on any free port and returns it with the port it announces on its
/// stdout (`--announce /dev/stdout`), within 30 s; the rest of its stdout is drained.
async fn start_scheduler(mut cmd: Command) -> Result<(Child, u16), BoxError> {
    let mut child = cmd
        .env("DMLC_PS_ROOT_PORT", "0")
        .args(["--announce", "/dev/stdout"])
        .stdout(Stdio::piped())
        .spawn()?;
    let mut lines =
        tokio::io::BufReader::new(child.stdout.take().ok_or("no scheduler stdout")?).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .map_err(|_| "the scheduler did not announce its port in time")??
        .ok_or("the scheduler exited before announcing its port")?;
    let port = line
        .trim()
        .parse()
        .map_err(|_| format!("the scheduler announced {line:?}, not a port"))?;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, port))
}

async fn run_job(
    args: &Args,
    dir: &std::path::Path,
    bytes: u64,
    keys: u64,
) -> Result<String, BoxError> {
    let secret: [u8; 16] = rand::random();
    let secret: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    // One line each: the PEM texts with their line breaks written `\n`.
    let tls: Vec<(&str, String)> = match args.tls {
        false => Vec::new(),
        true => {
            let ca = JobCa::new("ps-bench", Duration::from_secs(3600))?;
            let node = ca.node("node", &[])?;
            let line = |pem: &str| pem.trim_end().replace('\n', "\\n");
            vec![
                ("MXRS_TLS_CERT", line(&node.cert)),
                ("MXRS_TLS_KEY", line(&node.key)),
                ("MXRS_TLS_CA", line(&ca.cert_pem())),
            ]
        }
    };
    let env = |cmd: &mut Command, role: &str, port: u16| {
        cmd.envs(tls.iter().map(|(k, v)| (k, v)));
        cmd.env("DMLC_ROLE", role)
            .env("DMLC_PS_ROOT_URI", "127.0.0.1")
            .env("DMLC_PS_ROOT_PORT", port.to_string())
            .env("DMLC_NUM_SERVER", args.servers.to_string())
            .env("DMLC_NUM_WORKER", args.workers.to_string())
            .env("DMLC_NODE_HOST", "127.0.0.1")
            .env("MXRS_SECRET", &secret)
            .kill_on_drop(true);
    };
    let mut children: Vec<Child> = Vec::new();
    let mut cmd = Command::new(dir.join("ps-scheduler"));
    env(&mut cmd, "scheduler", 0);
    let (scheduler, port) = start_scheduler(cmd).await?;
    children.push(scheduler);
    for _ in 0..args.servers {
        let mut cmd = Command::new(dir.join("ps-server"));
        env(&mut cmd, "server", port);
        children.push(cmd.spawn()?);
    }
    let mut outputs = Vec::new();
    for _ in 0..args.workers {
        let mut cmd = Command::new(std::env::current_exe()?);
        cmd.args(["--worker", "--rounds", &args.rounds.to_string()])
            .args(["--warmup", &args.warmup.to_string()])
            .args(["--bytes", &bytes.to_string(), "--keys", &keys.to_string()])
            .args([
                "--mode",
                if args.mode == ModeArg::Sync {
                    "sync"
                } else {
                    "async"
                },
            ])
            .args([
                "--op",
                if args.op == OpArg::Fused {
                    "fused"
                } else {
                    "push-pull"
                },
            ])
            .stdout(Stdio::piped());
        env(&mut cmd, "worker", port);
        let mut child = cmd.spawn()?;
        let out = child.stdout.take().ok_or("no worker stdout")?;
        outputs.push(tokio::io::BufReader::new(out).lines());
        children.push(child);
    }
    let deadline = Duration::from_secs(600);
    let mut reports = Vec::new();
    for lines in &mut outputs {
        let line = tokio::time::timeout(deadline, lines.next_line())
            .await
            .map_err(|_| "a worker did not report in time")??
            .ok_or("a worker exited without a report")?;
        reports.push(serde_json::from_str::<serde_json::Value>(&line)?);
    }
    for mut child in children {
        let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .map_err(|_| "a node did not exit after the job")??;
        if !status.success() {
            return Err(format!("a node exited with {status}").into());
        }
    }
    Ok(summarise(args, bytes, keys, &reports).to_string())
}

fn summarise(
    args: &Args,
    bytes: u64,
    keys: u64,
    reports: &[serde_json::Value],
) -> serde_json::Value {
    let mut lat: Vec<f64> = reports
        .iter()
        .flat_map(|r| r["round_us"].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_f64())
        .collect();
    lat.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    let per_worker = |f: &dyn Fn(&serde_json::Value) -> f64| {
        reports.iter().map(f).sum::<f64>() / reports.len().max(1) as f64
    };
    let secs = |r: &serde_json::Value| r["seconds"].as_f64().unwrap_or(f64::NAN);
    let rounds = args.rounds as f64;
    serde_json::json!({
        "workers": args.workers,
        "servers": args.servers,
        "mode": format!("{:?}", args.mode).to_lowercase(),
        "op": format!("{:?}", args.op).to_lowercase(),
        "tls": args.tls,
        "bytes": bytes,
        "keys": keys,
        "rounds": args.rounds,
        "gbps_per_worker": per_worker(&|r| 2.0 * (bytes * keys) as f64 * rounds / secs(r) / 1e9),
        "key_ops_per_s": per_worker(&|r| keys as f64 * rounds / secs(r)),
        "p50_ms": pct(0.5) / 1e3,
        "p99_ms": pct(0.99) / 1e3,
    })
}

/// One worker process: pushes and pulls its keys, checks every value, reports timings.
async fn worker(args: &Args) -> Result<(), BoxError> {
    let cfg = Config::from_env()?;
    let mode = if args.mode == ModeArg::Sync {
        Mode::Sync
    } else {
        Mode::Async
    };
    let job = JobWorker::join(&cfg, mode).await?;
    let w = job.worker();
    let (rank, nw) = (w.rank(), w.num_workers());
    let numel = (args.bytes / 4) as usize;
    let keys: Vec<u64> = (0..args.keys).collect();
    let zeros = f32s(&vec![0.0; numel]);
    let items = keys
        .iter()
        .map(|&k| (k, DType::F32, vec![numel as u64], zeros.clone()))
        .collect();
    w.init(items).wait().await?;
    if mode == Mode::Async {
        let sgd = OptimizerSpec {
            name: "sgd".into(),
            params: vec![("learning_rate".into(), 1.0)],
            key_mults: vec![],
            payload: Vec::new(),
        };
        w.set_optimizer(&sgd).await?;
    }
    job.barrier().await?;
    let grad = f32s(&vec![(rank + 1) as f32; numel]);
    let expected = (nw * (nw + 1) / 2) as f32;
    let expected_bytes = f32s(&vec![expected; numel]);
    let mut round_us = Vec::with_capacity(args.rounds as usize);
    // Pulled values land in these, as they would in a training process's arrays.
    let mut pulled: Vec<Vec<u8>> = keys.iter().map(|_| vec![0u8; numel * 4]).collect();
    let mut total = Duration::ZERO;
    for r in 0..args.warmup + args.rounds {
        let items: Vec<_> = keys
            .iter()
            .map(|&k| (k, DType::F32, grad.clone()))
            .collect();
        let t0 = Instant::now();
        {
            let mut outs: Vec<&mut [u8]> = pulled.iter_mut().map(|v| v.as_mut_slice()).collect();
            if args.op == OpArg::Fused {
                w.pushpull(items).wait_into(&mut outs).await?;
            } else {
                let push = w.push(items);
                let pull = w.pull(&keys);
                push.wait().await?;
                pull.wait_into(&mut outs).await?;
            }
        }
        let dt = t0.elapsed();
        if r >= args.warmup {
            total += dt;
            round_us.push(dt.as_secs_f64() * 1e6);
        }
        if mode == Mode::Sync {
            for (k, v) in keys.iter().zip(&pulled) {
                if v[..] != expected_bytes[..] {
                    check(*k, v, |x| x == expected)?;
                }
            }
        }
    }
    job.barrier().await?;
    if mode == Mode::Async {
        let pushes = (nw as u64 * (args.warmup + args.rounds) as u64) as f32;
        let weighted = pushes / nw as f32 * expected;
        let values = w.pull(&keys).wait().await?;
        for (k, v) in keys.iter().zip(&values) {
            check(*k, v, |x| x == -weighted)?;
        }
    }
    println!(
        "{}",
        serde_json::json!({ "rank": rank, "seconds": total.as_secs_f64(), "round_us": round_us })
    );
    job.finish().await?;
    Ok(())
}

/// Finds the first element of `v` that is not `ok`, and reports it.
fn check(key: u64, v: &[u8], ok: impl Fn(f32) -> bool) -> Result<(), BoxError> {
    for (i, c) in v.chunks_exact(4).enumerate() {
        let x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if !ok(x) {
            return Err(format!("key {key} element {i} pulled {x}: wrong value").into());
        }
    }
    Ok(())
}

fn f32s(v: &[f32]) -> Bytes {
    Bytes::from(bytemuck::cast_slice::<f32, u8>(v).to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_read_as_bytes_and_keys() {
        assert_eq!(parse_run("4096").unwrap(), (4096, 1));
        assert_eq!(parse_run(" 4096 x 1000 ").unwrap(), (4096, 1000));
        for bad in ["2", "4097", "4096x0", "x", "lots"] {
            assert!(parse_run(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn a_summary_averages_the_workers_and_takes_latency_percentiles() {
        let args = Args::parse_from(["ps-bench", "--workers", "2", "--rounds", "10"]);
        let reports = [
            serde_json::json!({ "rank": 0, "seconds": 1.0, "round_us": [100.0, 300.0] }),
            serde_json::json!({ "rank": 1, "seconds": 2.0, "round_us": [200.0] }),
        ];
        let s = summarise(&args, 1000, 2, &reports);
        let close = |field: &str, want: f64| {
            let got = s[field].as_f64().unwrap();
            assert!(
                (got - want).abs() <= 1e-12 * want.abs(),
                "{field}: {got} != {want}"
            );
        };
        // 2 keys x 1000 bytes, pushed and pulled, 10 rounds: 40 kB per worker.
        close("gbps_per_worker", (40e3 / 1.0 + 40e3 / 2.0) / 2.0 / 1e9);
        close("key_ops_per_s", (20.0 / 1.0 + 20.0 / 2.0) / 2.0);
        close("p50_ms", 0.2);
        close("p99_ms", 0.3);
        assert_eq!(s["mode"], "sync");
        assert_eq!(s["op"], "pushpull");
    }
}
