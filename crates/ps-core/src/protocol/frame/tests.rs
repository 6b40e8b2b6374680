use super::*;
use proptest::prelude::*;

fn sample() -> Frame {
    let mut a = Entry::new(7, DType::F32, &[2, 3], 0, 6);
    a.round = 4;
    a.payload = Bytes::from((0..24u8).collect::<Vec<_>>());
    let mut b = Entry::new(u64::MAX, DType::F16, &[5], 1, 4);
    b.payload = Bytes::from(vec![9u8; 8]);
    let c = Entry::new(3, DType::F64, &[], 0, 1);
    let mut d = Entry::new(4, DType::F32, &[40], 0, 20);
    d.codec = Codec::TwoBit;
    d.payload = Bytes::from(vec![0xe4u8; 12]);
    // A row-sparse key's entry: the layout bit beside its two dimensions.
    let mut r = Entry::new(5, DType::F32, &[10, 2], 4, 6);
    r.rows = true;
    r.payload = rows::encode_push(&3u64.to_le_bytes(), &[1u8; 8]);
    Frame::request(Op::Push, 42, vec![a, b, c, d, r])
}

#[test]
fn round_trip() {
    let f = sample();
    let bytes = f.to_bytes();
    assert_eq!(bytes.len(), f.encoded_len());
    assert_eq!(Frame::check(&bytes, 1 << 20).unwrap(), Some(bytes.len()));
    assert_eq!(Frame::parse(bytes).unwrap(), f);
    let reply = Frame::reply_to(
        Op::Pull,
        1,
        vec![f.entries[0].error(&PsError::UnknownKey("key 7".into()))],
    );
    let back = Frame::parse(reply.to_bytes()).unwrap();
    assert!(back.reply);
    let err = back
        .entries
        .into_iter()
        .next()
        .unwrap()
        .into_result()
        .unwrap_err();
    assert!(matches!(err, PsError::UnknownKey(m) if m == "key 7"));
}

#[test]
fn the_row_sparse_layout_bit_travels_with_the_dimensions() {
    let f = sample();
    let back = Frame::parse(f.to_bytes()).unwrap();
    let flags: Vec<bool> = back.entries.iter().map(|e| e.rows).collect();
    assert_eq!(flags, [false, false, false, false, true]);
    assert_eq!(back.entries[4].shape.as_slice(), &[10, 2]);
    for op in [Op::PushRows, Op::PullRows] {
        let f = Frame::request(op, 1, vec![]);
        assert_eq!(Frame::parse(f.to_bytes()).unwrap().op, op);
    }
}

#[test]
fn chunked_encoding_passes_big_payloads_through() {
    let f = sample();
    let mut scratch = BytesMut::new();
    let mut chunks = Vec::new();
    f.encode(&mut scratch, 16, &mut chunks);
    // The 24-byte payload is its own chunk and is the very same memory.
    assert!(
        chunks
            .iter()
            .any(|c| c.as_ptr() == f.entries[0].payload.as_ptr())
    );
    let joined: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
    assert_eq!(Bytes::from(joined), f.to_bytes());
}

#[test]
fn incomplete_is_not_an_error() {
    let bytes = sample().to_bytes();
    for cut in 0..bytes.len() {
        assert_eq!(
            Frame::check(&bytes[..cut], 1 << 20).unwrap(),
            None,
            "cut {cut}"
        );
    }
}

#[test]
fn limits_and_garbage() {
    let bytes = sample().to_bytes();
    let e = Frame::check(&bytes, 16).unwrap_err().to_string();
    assert!(e.contains("over the limit"), "{e}");
    assert!(Frame::check(&[1, 0, 0, 0], 1 << 20).is_err());
    let mut bad = bytes.to_vec();
    bad[4] = 99;
    assert!(
        Frame::parse(Bytes::from(bad))
            .unwrap_err()
            .to_string()
            .contains("unknown op 99")
    );
    let mut bad = bytes.to_vec();
    bad.push(0);
    bad[0] += 1;
    assert!(
        Frame::parse(Bytes::from(bad))
            .unwrap_err()
            .to_string()
            .contains("stray")
    );
    let mut bad = bytes.to_vec();
    bad[LEN_BYTES + FRAME_HEADER + 35] = 7; // the codec byte of the first entry
    assert!(
        Frame::parse(Bytes::from(bad))
            .unwrap_err()
            .to_string()
            .contains("unknown codec 7")
    );
    let mut bad = bytes.to_vec();
    bad[6] = 200; // n_entries far beyond the bytes present
    assert!(
        Frame::parse(Bytes::from(bad))
            .unwrap_err()
            .to_string()
            .contains("truncated")
    );
}

fn decode_all(data: &[u8]) {
    let mut buf = data;
    while let Ok(Some(n)) = Frame::check(buf, 1 << 16) {
        let _ = Frame::parse(Bytes::copy_from_slice(&buf[..n]));
        buf = &buf[n..];
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        decode_all(&data);
    }

    #[test]
    fn mutated_frames_never_panic(
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        cut in any::<usize>(),
    ) {
        let mut bytes = sample().to_bytes().to_vec();
        for (at, v) in flips {
            let n = bytes.len();
            bytes[at % n] = v;
        }
        let cut = cut % (bytes.len() + 1);
        decode_all(&bytes[..cut]);
        decode_all(&bytes);
    }
}

#[test]
fn low_precision_pulls_travel_as_frame_flags() {
    for pull_as in [None, Some(DType::F16), Some(DType::BF16)] {
        for pull_weights in [false, true] {
            let f = Frame {
                pull_as,
                pull_weights,
                ..Frame::request(Op::PushPull, 3, vec![Entry::new(1, DType::F32, &[4], 0, 4)])
            };
            let back = Frame::parse(f.to_bytes()).unwrap();
            assert_eq!((back.pull_as, back.pull_weights), (pull_as, pull_weights));
        }
    }
    // float16 and bfloat16 at once is no request a worker makes
    let mut bytes = BytesMut::from(&Frame::request(Op::Pull, 3, vec![]).to_bytes()[..]);
    bytes[LEN_BYTES + 1] |= 4 | 8;
    let err = Frame::parse(bytes.freeze()).unwrap_err();
    assert!(
        err.to_string()
            .contains("float16 and bfloat16 pulls at once"),
        "{err}"
    );
}
