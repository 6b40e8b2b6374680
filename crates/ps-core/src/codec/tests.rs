use super::*;

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn two_bit(t: f32) -> Compression {
    Compression::new("2bit", f64::from(t)).unwrap()
}

fn decoded(c: Compression, payload: &[u8], n: usize) -> Vec<f32> {
    let mut out = vec![f32::NAN; n];
    c.decode(payload, &mut out);
    out
}

#[test]
fn two_bit_layout_is_four_codes_a_byte_high_bits_first_in_groups_of_four_bytes() {
    let mut g = vec![0.0f32; 17];
    g[..4].copy_from_slice(&[0.5, -0.5, 0.49, -0.7]);
    g[4] = 1.0;
    g[15] = 0.6;
    g[16] = 0.5;
    let mut r = vec![0.0f32; 17];
    let payload = two_bit(0.5).encode(&f32s(&g), &mut r);
    let mut expected = 0.5f32.to_le_bytes().to_vec();
    // +, -, 0, -  |  +, 0, 0, 0  |  0 x4  |  0, 0, 0, +  ||  + then padding.
    expected.extend_from_slice(&[0b11_10_00_10, 0b11_00_00_00, 0, 0b00_00_00_11]);
    expected.extend_from_slice(&[0b11_00_00_00, 0, 0, 0]);
    assert_eq!(payload, expected);
    assert_eq!(payload.len() as u64, two_bit_len(17));
    let mut want_r = vec![0.0f32; 17];
    want_r[2] = 0.49;
    want_r[3] = -0.7f32 + 0.5;
    want_r[4] = 0.5;
    want_r[15] = 0.6f32 - 0.5;
    assert_eq!(r, want_r);
    let mut want = vec![0.0f32; 17];
    want[..5].copy_from_slice(&[0.5, -0.5, 0.0, -0.5, 0.5]);
    want[15] = 0.5;
    want[16] = 0.5;
    assert_eq!(decoded(two_bit(0.5), &payload, 17), want);
}

#[test]
fn two_bit_lengths() {
    for (count, len) in [(0u64, 4u64), (1, 8), (16, 8), (17, 12), (32, 12), (33, 16)] {
        assert_eq!(two_bit_len(count), len, "count {count}");
        let payload = two_bit(1.0).encode(&vec![0; count as usize * 4], &mut [0.0; 40]);
        assert_eq!(payload.len() as u64, len, "count {count}");
    }
    assert_eq!(two_bit_len(u64::MAX), (u64::MAX / 16 + 1) * 4 + 4);
}

#[test]
fn the_residual_follows_mxnets_float32_order_at_and_near_the_threshold() {
    let t = 0.3f32;
    let below = f32::from_bits(t.to_bits() - 1);
    let above = f32::from_bits(t.to_bits() + 1);
    let grads = [t, below, above, -t, -below, -above, 0.1, 0.2];
    let mut r = vec![0.0f32; grads.len()];
    let mut sent = vec![0.0f32; grads.len()];
    for round in 0..5 {
        let payload = two_bit(t).encode(&f32s(&grads), &mut r);
        let got = decoded(two_bit(t), &payload, grads.len());
        for (s, v) in sent.iter_mut().zip(&got) {
            *s += v;
        }
        if round == 0 {
            // At the threshold (either sign) and beyond it is sent; just below it is not.
            assert_eq!(got, [t, 0.0, t, -t, 0.0, -t, 0.0, 0.0]);
            assert_eq!(r[0], 0.0);
            assert_eq!(r[1], below);
            assert_eq!(r[2], above - t);
            assert_eq!(r[5], -above + t);
        }
    }
    // Element by element, the float32 recurrence r = r + g; r >= t: r - t; r <= -t: r + t.
    let mut want = vec![0.0f32; grads.len()];
    for _ in 0..5 {
        for (w, g) in want.iter_mut().zip(grads) {
            let v = *w + g;
            *w = if v >= t {
                v - t
            } else if v <= -t {
                v + t
            } else {
                v
            };
        }
    }
    assert_eq!(r, want);
    // What was sent plus what is left is what was pushed (up to float32 rounding).
    for ((s, left), g) in sent.iter().zip(&r).zip(grads) {
        assert!((s + left - 5.0 * g).abs() < 1e-6, "{s} + {left} vs 5 x {g}");
    }
}

#[test]
fn slices_packed_on_their_own_decode_like_the_whole() {
    let n = 53;
    let g: Vec<f32> = (0..n)
        .map(|i| ((i * 37 % 19) as f32 - 9.0) * 0.11)
        .collect();
    let bytes = f32s(&g);
    let mut whole_r = vec![0.0f32; n];
    let mut parts_r = vec![0.0f32; n];
    for _ in 0..3 {
        let whole = decoded(two_bit(0.4), &two_bit(0.4).encode(&bytes, &mut whole_r), n);
        let mut parts = Vec::new();
        for (a, b) in [(0, 13), (13, 29), (29, 45), (45, 53)] {
            let payload = two_bit(0.4).encode(&bytes[a * 4..b * 4], &mut parts_r[a..b]);
            assert_eq!(payload.len() as u64, two_bit_len((b - a) as u64));
            parts.extend(decoded(two_bit(0.4), &payload, b - a));
        }
        assert_eq!(parts, whole);
        assert_eq!(parts_r, whole_r);
    }
}

#[test]
fn two_bit_decodes_into_sums_and_reads_unused_codes_as_zero() {
    let mut payload = 2.0f32.to_le_bytes().to_vec();
    payload.extend_from_slice(&[0b11_10_01_00, 0b10_11_11_11, 0, 0]);
    let p = Packing::TwoBit;
    p.check(1, &payload, 8, "it").unwrap();
    let mut acc = vec![1.0f32; 8];
    p.add_into(&mut acc, &payload);
    assert_eq!(acc, [3.0, -1.0, 1.0, 1.0, -1.0, 3.0, 3.0, 3.0]);
    let plain = f32s(&[0.5; 8]);
    let mut sum = vec![0.0f64; 8];
    Packing::sum_into(
        &mut sum,
        (Packing::Plain(DType::F32), &plain),
        (p, &payload),
    );
    assert_eq!(sum, [2.5, -1.5, 0.5, 0.5, -1.5, 2.5, 2.5, 2.5]);
}

#[test]
fn malformed_two_bit_payloads_are_refused() {
    let p = Packing::TwoBit;
    let with = |t: f32, codes: usize| {
        let mut b = t.to_le_bytes().to_vec();
        b.resize(4 + codes, 0);
        b
    };
    let e = p.check(9, &with(0.5, 4), 17, "float32 [17]").unwrap_err();
    assert!(matches!(e, PsError::ShapeMismatch(_)));
    assert_eq!(
        e.to_string(),
        "key 9: pushed 8 bytes of 2-bit codes but float32 [17] takes 12"
    );
    assert!(p.check(9, &[0, 0], 0, "it").is_err());
    for t in [0.0, -0.5, f32::NAN, f32::INFINITY] {
        let e = p.check(9, &with(t, 8), 17, "it").unwrap_err();
        assert!(matches!(e, PsError::Rejected(_)));
        assert!(e.to_string().contains("must be finite and above 0"), "{e}");
    }
    p.check(9, &with(1e-30, 8), 17, "it").unwrap();
    let e = Packing::Plain(DType::F16)
        .check(2, &[0; 6], 4, "float32 [4]")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "key 2: pushed 6 bytes of float16 but float32 [4] takes 8"
    );
}

#[test]
fn sixteen_bit_kinds_round_to_nearest_even() {
    // float16 has 10 fraction bits, bfloat16 7: halfway cases go to the even neighbour.
    let one = 1.0f32;
    let f16_cases = [
        (one + 2f32.powi(-11), one),
        (one + 3.0 * 2f32.powi(-11), one + 2f32.powi(-9)),
        (one + 2f32.powi(-11) + 2f32.powi(-20), one + 2f32.powi(-10)),
        (70000.0, f32::INFINITY),
        (-0.0, -0.0),
    ];
    let bf16_cases = [
        (one + 2f32.powi(-8), one),
        (one + 3.0 * 2f32.powi(-8), one + 2f32.powi(-6)),
        (one + 2f32.powi(-8) + 2f32.powi(-20), one + 2f32.powi(-7)),
        (f32::from_bits(0x7f7f_7fff), f32::from_bits(0x7f7f_0000)),
        (f32::from_bits(0x7f7f_8000), f32::INFINITY),
    ];
    for (c, cases) in [
        (Compression::F16, &f16_cases[..]),
        (Compression::BF16, &bf16_cases[..]),
    ] {
        let (x, want): (Vec<f32>, Vec<f32>) = cases.iter().copied().unzip();
        let payload = c.encode(&f32s(&x), &mut []);
        assert_eq!(payload.len(), 2 * x.len());
        let got = decoded(c, &payload, x.len());
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{c}"
        );
    }
}

#[test]
fn compression_names_and_bad_ones() {
    assert_eq!(
        Compression::new("2bit", 0.5).unwrap(),
        Compression::TwoBit { threshold: 0.5 }
    );
    assert_eq!(Compression::new("fp16", 0.0).unwrap().dtype(), DType::F16);
    assert_eq!(Compression::new("bf16", 0.0).unwrap().codec(), Codec::Plain);
    for t in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e300] {
        let e = Compression::new("2bit", t).unwrap_err().to_string();
        assert!(
            e.contains("threshold must be finite and greater than 0"),
            "{e}"
        );
    }
    let e = Compression::new("1bit", 0.5).unwrap_err().to_string();
    assert_eq!(
        e,
        "unknown gradient compression type '1bit' (2bit, fp16 or bf16)"
    );
    assert!(Codec::from_code(2).is_err());
}
