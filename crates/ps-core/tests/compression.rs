//! Compressed pushes end to end in one process: workers encode (2bit with residuals, fp16, bf16),
//! servers check, decode and sum in float32, pulls come back plain; the servers' push counters
//! show the bytes that crossed the wire; malformed compressed entries are refused with nothing
//! changed and the connection still serving.

mod common;

use bytes::Bytes;
use common::*;
use half::{bf16, f16};
use ps_core::codec::{Codec, Compression, two_bit_len};
use ps_core::placement::Partitioner;
use ps_core::protocol::connection::FrameReader;
use ps_core::protocol::frame::{Entry, FRAME_HEADER, Frame, LEN_BYTES, Mode, Op};
use ps_core::protocol::transport;
use ps_core::updater::OptimizerSpec;
use ps_core::{DType, PsError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Gradient of worker `w` in round `r`: a spread of values around a threshold of 0.5, some
/// exactly at it.
fn grad(w: u32, r: u32, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| match (i + w as usize + r as usize) % 7 {
            0 => 0.5,
            1 => -0.5,
            k => (k as f32 - 3.5) * 0.13 * (w + 1) as f32,
        })
        .collect()
}

/// The 2bit recurrence, element by element in float32: what a worker sends.
fn two_bit_reference(residual: &mut [f32], g: &[f32], t: f32) -> Vec<f32> {
    residual
        .iter_mut()
        .zip(g)
        .map(|(r, g)| {
            let v = *r + g;
            if v >= t {
                *r = v - t;
                t
            } else if v <= -t {
                *r = v + t;
                -t
            } else {
                *r = v;
                0.0
            }
        })
        .collect()
}

/// Wire bytes of the payloads of one push of an `n`-element float32 key placed by `p`.
fn payload_bytes(p: &Partitioner, key: u64, n: u64, c: Option<Compression>) -> u64 {
    p.parts(key, n, 4)
        .iter()
        .map(|part| match c {
            None => part.count * 4,
            Some(Compression::TwoBit { .. }) => two_bit_len(part.count),
            Some(_) => part.count * 2,
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_bit_pushes_sum_what_each_worker_quantised_over_sliced_keys() {
    let servers = Servers::start(2, 2, None).await;
    // Bound 40: key 2 (100 elements) is sliced over both servers at element 50, not a
    // multiple of 16.
    let workers = servers.workers(2, Mode::Sync, 40).await;
    let sizes = [(1u64, 21usize), (2, 100)];
    for wk in &workers {
        let items = sizes
            .iter()
            .map(|&(k, n)| (k, DType::F32, vec![n as u64], f32s(&vec![0.0; n])))
            .collect();
        within(wk.init(items).wait()).await.unwrap();
    }
    let t = 0.5;
    let c = Compression::new("2bit", t as f64).unwrap();
    let mut residuals: Vec<Vec<Vec<f32>>> = (0..2)
        .map(|_| sizes.iter().map(|&(_, n)| vec![0.0; n]).collect())
        .collect();
    for round in 0..4 {
        let mut tickets = Vec::new();
        let mut expected: Vec<Vec<f32>> = sizes.iter().map(|&(_, n)| vec![0.0; n]).collect();
        for (rank, wk) in workers.iter().enumerate() {
            let mut items = Vec::new();
            for (i, &(k, n)) in sizes.iter().enumerate() {
                let g = grad(rank as u32, round, n);
                let sent = two_bit_reference(&mut residuals[rank][i], &g, t);
                expected[i].iter_mut().zip(sent).for_each(|(e, s)| *e += s);
                items.push((k, DType::F32, f32s(&g)));
            }
            tickets.push(wk.push_compressed(items, c));
        }
        for ticket in tickets {
            within(ticket.wait()).await.unwrap();
        }
        for wk in &workers {
            let values = within(wk.pull(&[1, 2]).wait()).await.unwrap();
            for (got, want) in values.iter().zip(&expected) {
                assert_eq!(&to_f32(got), want, "round {round}");
            }
        }
    }
    // The wire carried 2-bit codes: per push 4 bytes of threshold and 4 per 16 elements of
    // each piece.
    let p = Partitioner::new(2, 40);
    let per_push: u64 = sizes
        .iter()
        .map(|&(k, n)| payload_bytes(&p, k, n as u64, Some(c)))
        .sum();
    assert_eq!(per_push, (4 + 8) + (4 + 16) + (4 + 16));
    let stats = within(workers[0].server_stats()).await.unwrap();
    let received: u64 = stats.iter().map(|s| s.payload_bytes).sum();
    assert_eq!(received, 2 * 4 * per_push);
    assert_eq!(stats.iter().map(|s| s.entries).sum::<u64>(), 2 * 4 * 3);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_bit_feeds_the_servers_optimizer_and_pushpull_answers_plain() {
    let servers = Servers::start(1, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 1000).await;
    for wk in &workers {
        within(
            wk.init(vec![(3, DType::F32, vec![4], f32s(&[1.0; 4]))])
                .wait(),
        )
        .await
        .unwrap();
    }
    let sgd = OptimizerSpec {
        name: "sgd".into(),
        params: vec![("learning_rate".into(), 0.1)],
        key_mults: vec![],
        payload: Vec::new(),
    };
    within(workers[0].set_optimizer(&sgd)).await.unwrap();
    let c = Compression::new("2bit", 0.25).unwrap();
    let g = [[0.3f32, -0.3, 0.1, 0.25], [0.3, 0.2, -0.26, 0.0]];
    let tickets: Vec<_> = workers
        .iter()
        .zip(g)
        .map(|(wk, g)| wk.pushpull_compressed(vec![(3, DType::F32, f32s(&g))], c))
        .collect();
    for ticket in tickets {
        let got = within(ticket.wait()).await.unwrap();
        // Sent: [0.25, -0.25, 0, 0.25] + [0.25, 0, -0.25, 0]; w = 1 - 0.1 x sum.
        assert_eq!(to_f32(&got[0]), [0.95, 1.025, 1.025, 0.975]);
    }
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_bit_pushes_sum_the_rounded_values_in_f32_at_half_the_bytes() {
    let servers = Servers::start(2, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 40).await;
    let n = 100;
    for wk in &workers {
        within(
            wk.init(vec![(5, DType::F32, vec![n], f32s(&[0.0; 100]))])
                .wait(),
        )
        .await
        .unwrap();
    }
    let g: Vec<Vec<f32>> = (0..2)
        .map(|w| {
            (0..n)
                .map(|i| 1.0 + i as f32 * 1e-3 + w as f32 / 3.0)
                .collect()
        })
        .collect();
    let mut before = within(workers[0].server_stats()).await.unwrap();
    for (kind, round) in [("fp16", 0), ("bf16", 1), ("none", 2)] {
        let c = Compression::new(kind, 0.0).ok();
        let tickets: Vec<_> = workers
            .iter()
            .zip(&g)
            .map(|(wk, g)| {
                let items = vec![(5, DType::F32, f32s(g))];
                match c {
                    Some(c) => wk.push_compressed(items, c),
                    None => wk.push(items),
                }
            })
            .collect();
        for ticket in tickets {
            within(ticket.wait()).await.unwrap();
        }
        let round_to = |v: f32| match kind {
            "fp16" => f16::from_f32(v).to_f32(),
            "bf16" => bf16::from_f32(v).to_f32(),
            _ => v,
        };
        let want: Vec<f32> = (0..n as usize)
            .map(|i| round_to(g[0][i]) + round_to(g[1][i]))
            .collect();
        let got = within(workers[1].pull(&[5]).wait()).await.unwrap();
        assert_eq!(to_f32(&got[0]), want, "{kind} round {round}");
        let after = within(workers[0].server_stats()).await.unwrap();
        let bytes: u64 = after
            .iter()
            .zip(&before)
            .map(|(a, b)| a.payload_bytes - b.payload_bytes)
            .sum();
        let per_element = if c.is_some() { 2 } else { 4 };
        assert_eq!(bytes, 2 * per_element * n, "{kind}");
        before = after;
    }
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compression_takes_float32_values_only() {
    let servers = Servers::start(1, 1, None).await;
    let workers = servers.workers(1, Mode::Sync, 1000).await;
    let w = &workers[0];
    within(
        w.init(vec![(1, DType::F64, vec![2], f64s(&[0.0; 2]))])
            .wait(),
    )
    .await
    .unwrap();
    let c = Compression::new("fp16", 0.0).unwrap();
    let e = within(
        w.push_compressed(vec![(1, DType::F64, f64s(&[1.0; 2]))], c)
            .wait(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, PsError::Rejected(_)));
    assert_eq!(
        e.to_string(),
        "key 1: gradient compression fp16 applies to float32 values; this push is float64 into \
         a key of float64"
    );
    servers.stop().await;
}

/// A 2-bit entry of key `key` (shape `[n]`, all of it) with `threshold` and `codes` code bytes.
fn two_bit_entry(key: u64, n: u64, threshold: f32, codes: &[u8], round: u64) -> Entry {
    let mut e = entry(key, &[n], &[], round);
    e.codec = Codec::TwoBit;
    let mut payload = threshold.to_le_bytes().to_vec();
    payload.extend_from_slice(codes);
    e.payload = Bytes::from(payload);
    e
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_compressed_entries_are_refused_and_change_nothing() {
    let servers = Servers::start(1, 1, None).await;
    let mut raw = Raw::open(&servers, 0, 1).await;
    let reply = raw
        .call(Op::Init, vec![entry(1, &[5], &[1.0; 5], 0)])
        .await
        .unwrap();
    assert_eq!(reply.entries[0].status, 0);
    let mut f64_key = entry(2, &[5], &[], 0);
    f64_key.dtype = DType::F64;
    f64_key.payload = f64s(&[0.0; 5]);
    let reply = raw.call(Op::Init, vec![f64_key]).await.unwrap();
    assert_eq!(reply.entries[0].status, 0);

    let mut marked_f64 = two_bit_entry(2, 5, 0.5, &[0xff; 4], 0);
    marked_f64.dtype = DType::F64;
    let cases = [
        (
            two_bit_entry(1, 5, 0.5, &[0xff; 3], 0),
            "pushed 7 bytes of 2-bit codes",
        ),
        (
            two_bit_entry(1, 5, 0.5, &[0xff; 8], 0),
            "pushed 12 bytes of 2-bit codes",
        ),
        (
            two_bit_entry(1, 5, f32::NAN, &[0xff; 4], 0),
            "threshold NaN",
        ),
        (two_bit_entry(1, 5, 0.0, &[0xff; 4], 0), "threshold 0"),
        (two_bit_entry(1, 5, -1.0, &[0xff; 4], 0), "threshold -1"),
        (
            two_bit_entry(1, 5, f32::INFINITY, &[0xff; 4], 0),
            "threshold inf",
        ),
        (
            two_bit_entry(2, 5, 0.5, &[0xff; 4], 0),
            "pushed float32 [5] but the key holds float64",
        ),
        (
            marked_f64,
            "a 2-bit push must be marked float32 (what it decodes to), not float64",
        ),
    ];
    for (bad, why) in cases {
        for op in [Op::Push, Op::PushPull] {
            // Beside a good entry of the same key's next round: neither is applied.
            let good = two_bit_entry(1, 5, 0.5, &[0xff; 4], 0);
            let reply = raw.call(op, vec![good, bad.clone()]).await.unwrap();
            let errors: Vec<String> = reply
                .entries
                .into_iter()
                .map(|e| e.into_result().unwrap_err().to_string())
                .collect();
            assert!(errors[1].contains(why), "{why}: {errors:?}");
            assert!(errors[0].contains("not applied"), "{errors:?}");
        }
    }
    // Compressed values in an init or a pull are refused too.
    for op in [Op::Init, Op::Pull] {
        let reply = raw
            .call(op, vec![two_bit_entry(1, 5, 0.5, &[0xff; 4], 0)])
            .await
            .unwrap();
        let e = reply.entries[0].clone().into_result().unwrap_err();
        assert!(
            e.to_string()
                .starts_with("key 1: only pushed values may be compressed"),
            "{e}"
        );
    }
    // Nothing changed: the key is still at round 0 with its init value, and the connection
    // still serves; a good 2-bit push completes round 0.
    let reply = raw
        .call(Op::Pull, vec![entry(1, &[5], &[], 0)])
        .await
        .unwrap();
    let value = reply.entries[0].clone().into_result().unwrap();
    assert_eq!((value.round, to_f32(&value.payload)), (0, vec![1.0; 5]));
    let codes = [0b11_10_00_01, 0b10_00_00_00, 0, 0];
    let reply = raw
        .call(Op::PushPull, vec![two_bit_entry(1, 5, 0.5, &codes, 0)])
        .await
        .unwrap();
    let value = reply.entries[0].clone().into_result().unwrap();
    assert_eq!(value.round, 1);
    assert_eq!(to_f32(&value.payload), [0.5, -0.5, 0.0, 0.0, -0.5]);
    // Every push frame counted, refused ones included.
    let stats = servers.servers[0].push_stats();
    assert_eq!((stats.frames, stats.entries), (17, 33));
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_codec_closes_only_that_connection() {
    let servers = Servers::start(1, 2, None).await;
    let mut good = Raw::open(&servers, 0, 2).await;
    // Worker 1 says hello by hand, then sends an init whose entry has codec 9.
    let mut s = transport::connect(servers.addrs[0].0, &Default::default())
        .await
        .unwrap();
    let hello = Entry {
        key: 1,
        round: Mode::Sync.code(),
        count: 2,
        ..Entry::new(0, DType::F32, &[], 0, 0)
    };
    s.write_all(&Frame::request(Op::Hello, 1, vec![hello]).to_bytes())
        .await
        .unwrap();
    let reply = within(FrameReader::new(&mut s, 1 << 20).read_frame())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply.entries[0].status, 0);
    let mut bytes = Frame::request(Op::Init, 2, vec![entry(1, &[4], &[1.0; 4], 0)])
        .to_bytes()
        .to_vec();
    bytes[LEN_BYTES + FRAME_HEADER + 35] = 9; // the codec byte of the entry
    s.write_all(&bytes).await.unwrap();
    let mut buf = [0u8; 64];
    assert!(matches!(within(s.read(&mut buf)).await, Ok(0) | Err(_)));
    // Worker 0 is still served.
    let reply = good
        .call(Op::Init, vec![entry(1, &[4], &[2.0; 4], 0)])
        .await
        .unwrap();
    assert_eq!(reply.entries[0].status, 0);
    let reply = good
        .call(Op::Pull, vec![entry(1, &[4], &[], 0)])
        .await
        .unwrap();
    let value = reply.entries[0].clone().into_result().unwrap();
    assert_eq!(to_f32(&value.payload), [2.0; 4]);
    servers.stop().await;
}

/// `fp16`/`bf16` rounding of `v`.
fn rounded(kind: &str, v: f32) -> f32 {
    match kind {
        "fp16" => f16::from_f32(v).to_f32(),
        _ => bf16::from_f32(v).to_f32(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_bit_pulls_carry_sums_of_pushes_at_half_the_bytes_and_weights_whole() {
    let servers = Servers::start(1, 1, None).await;
    let mut raw = Raw::open(&servers, 0, 1).await;
    let init: Vec<f32> = (0..5).map(|i| 1.0 + i as f32 / 3.0).collect();
    let reply = raw.call(Op::Init, vec![entry(1, &[5], &init, 0)]).await;
    assert_eq!(reply.unwrap().entries[0].status, 0);
    let pull = |round, pull_as| Frame {
        pull_as,
        ..Frame::request(Op::Pull, 0, vec![entry(1, &[5], &[], round)])
    };
    // Round 0 holds the initial value (weights): float32 whatever the request takes.
    let got = raw.call_frame(pull(0, Some(DType::F16))).await.unwrap();
    let e = got.entries[0].clone().into_result().unwrap();
    assert_eq!((e.dtype, to_f32(&e.payload)), (DType::F32, init.clone()));
    // A pushpull completes round 1: its sum of pushes comes back in float16, 2 bytes each.
    let g: Vec<f32> = (0..5).map(|i| 0.1 + i as f32 / 7.0).collect();
    let frame = Frame {
        pull_as: Some(DType::F16),
        ..Frame::request(Op::PushPull, 0, vec![entry(1, &[5], &g, 0)])
    };
    let e = raw.call_frame(frame).await.unwrap().entries[0]
        .clone()
        .into_result()
        .unwrap();
    assert_eq!((e.dtype, e.payload.len()), (DType::F16, 10));
    let want: Vec<f32> = g.iter().map(|&v| rounded("fp16", v)).collect();
    let got: Vec<f32> = e
        .payload
        .chunks_exact(2)
        .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
        .collect();
    assert_eq!(got, want);
    // The same round in bfloat16, and plain without the flag.
    let e = raw
        .call_frame(pull(1, Some(DType::BF16)))
        .await
        .unwrap()
        .entries[0]
        .clone();
    assert_eq!((e.dtype, e.payload.len()), (DType::BF16, 10));
    let e = raw.call_frame(pull(1, None)).await.unwrap().entries[0].clone();
    assert_eq!((e.dtype, to_f32(&e.payload)), (DType::F32, g));
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_widen_sixteen_bit_pulls_of_sliced_keys_and_keep_weights_float32() {
    let servers = Servers::start(2, 2, None).await;
    // Bound 40: key 7 (100 elements) is sliced over both servers.
    let workers = servers.workers(2, Mode::Sync, 40).await;
    let n = 100;
    for wk in &workers {
        let items = vec![(7, DType::F32, vec![n], f32s(&[0.5; 100]))];
        within(wk.init(items).wait()).await.unwrap();
    }
    let g: Vec<Vec<f32>> = (0..2)
        .map(|w| {
            (0..n)
                .map(|i| 0.3 + i as f32 * 1e-3 + w as f32 / 3.0)
                .collect()
        })
        .collect();
    for (round, kind) in ["fp16", "bf16"].into_iter().enumerate() {
        let c = Compression::new(kind, 0.0).unwrap();
        let tickets: Vec<_> = workers
            .iter()
            .zip(&g)
            .map(|(wk, g)| wk.pushpull_compressed(vec![(7, DType::F32, f32s(g))], c))
            .collect();
        // the float32 sum of the rounded pushes, rounded again for the wire
        let want: Vec<f32> = (0..n as usize)
            .map(|i| rounded(kind, rounded(kind, g[0][i]) + rounded(kind, g[1][i])))
            .collect();
        for ticket in tickets {
            let got = within(ticket.wait()).await.unwrap();
            assert_eq!(to_f32(&got[0]), want, "{kind} round {round}");
        }
        let got = within(workers[1].pull_request(&[7], 0, Some(c)).wait()).await;
        assert_eq!(to_f32(&got.unwrap()[0]), want, "{kind} pull");
        let exact = within(workers[1].pull(&[7]).wait()).await.unwrap();
        let sum: Vec<f32> = (0..n as usize)
            .map(|i| rounded(kind, g[0][i]) + rounded(kind, g[1][i]))
            .collect();
        assert_eq!(to_f32(&exact[0]), sum, "{kind} plain pull");
    }
    // With an optimizer on the servers the value is weights: float32 however pulled.
    let sgd = OptimizerSpec {
        name: "sgd".into(),
        params: vec![("learning_rate".into(), 0.5)],
        key_mults: vec![],
        payload: Vec::new(),
    };
    within(workers[0].set_optimizer(&sgd)).await.unwrap();
    let c = Compression::new("fp16", 0.0).unwrap();
    let before = to_f32(&within(workers[0].pull(&[7]).wait()).await.unwrap()[0]);
    let tickets: Vec<_> = workers
        .iter()
        .map(|wk| wk.pushpull_compressed(vec![(7, DType::F32, f32s(&[0.1; 100]))], c))
        .collect();
    let step = 0.5 * (2.0 * rounded("fp16", 0.1));
    for ticket in tickets {
        let got = to_f32(&within(ticket.wait()).await.unwrap()[0]);
        let want: Vec<f32> = before.iter().map(|w| w - step).collect();
        assert_eq!(got, want);
        assert!(
            got.iter().any(|&v| v != rounded("fp16", v)),
            "float32 weights"
        );
    }
    servers.stop().await;
}
