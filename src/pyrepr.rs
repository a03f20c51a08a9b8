//! Lengths of Python `repr()` strings, computed without building them.
//!
//! langchain-core's `count_tokens_approximately` counts `len(repr(...))` of tool calls
//! and of unknown content blocks; matching its numbers means matching `repr()`.

use serde_json::Value;

use crate::message::{Args, ToolCall};
use crate::printable::NON_PRINTABLE;

/// Length of Python's `repr()` of LangChain's `tool_calls` list.
pub fn tool_calls_repr_len(calls: &[ToolCall]) -> usize {
    let items = calls.iter().map(|c| {
        tool_call_repr_len(
            py_str_repr_len(&c.name),
            args_repr_len(&c.args),
            c.id.as_deref().map_or(4, py_str_repr_len),
        )
    });
    py_list_repr_len(items)
}

/// Length of the `repr()` of a call's arguments, whole or as facts.
pub fn args_repr_len(args: &Args) -> usize {
    match args {
        Args::Whole(v) => py_repr_len(v),
        Args::Facts(f) => f.repr_len as usize,
    }
}

/// Length of the `repr()` of LangChain's tool call dict
/// `{'name': N, 'args': A, 'id': I, 'type': 'tool_call'}`, given the lengths of the
/// `repr()`s of N, A and I.
pub fn tool_call_repr_len(name: usize, args: usize, id: usize) -> usize {
    const FIXED: usize = "{'name': , 'args': , 'id': , 'type': 'tool_call'}".len();
    FIXED + name + args + id
}

/// Length of the `repr()` of a list whose items' `repr()`s have these lengths.
pub fn py_list_repr_len(items: impl Iterator<Item = usize>) -> usize {
    let (mut n, mut total) = (0usize, 0usize);
    for len in items {
        n += 1;
        total += len;
    }
    2 + total + n.saturating_sub(1) * 2
}

/// Length of the `repr()` of a dict whose `(key, value)` `repr()`s have these lengths.
pub fn py_dict_repr_len(items: impl Iterator<Item = (usize, usize)>) -> usize {
    py_list_repr_len(items.map(|(k, v)| k + 2 + v))
}

/// Length of Python's `repr()` of the value a JSON document decodes to.
pub fn py_repr_len(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => py_number_repr_len(n),
        Value::String(s) => py_str_repr_len(s),
        Value::Array(items) => py_list_repr_len(items.iter().map(py_repr_len)),
        Value::Object(map) => py_dict_repr_len(
            map.iter()
                .map(|(k, v)| (py_str_repr_len(k), py_repr_len(v))),
        ),
    }
}

fn py_number_repr_len(n: &serde_json::Number) -> usize {
    if n.is_i64() || n.is_u64() {
        return n.to_string().len();
    }
    let f = n.as_f64().unwrap_or(0.0);
    py_float_repr_len(f)
}

/// Python's `repr(float)`: shortest round-trip digits, fixed notation for decimal
/// exponents in -4..16 (`0.001`, `12.0`), scientific otherwise (`1e-05`, `1.5e+16`).
pub fn py_float_repr_len(f: f64) -> usize {
    if !f.is_finite() {
        return if f.is_nan() {
            3
        } else {
            3 + usize::from(f < 0.0)
        };
    }
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits = mantissa.chars().filter(char::is_ascii_digit).count();
    let exp: i64 = exp.parse().unwrap_or(0);
    let sign = usize::from(f.is_sign_negative());
    let body = if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_digits = exp as usize + 1;
            int_digits + 1 + digits.saturating_sub(int_digits).max(1)
        } else {
            // 0.00ddd
            2 + (-exp - 1) as usize + digits
        }
    } else {
        let mantissa_len = if digits > 1 { digits + 1 } else { 1 };
        let exp_digits = exp.unsigned_abs().to_string().len().max(2);
        mantissa_len + 2 + exp_digits
    };
    sign + body
}

/// What `repr()` of an ASCII string needs: extra escape characters, single and double
/// quotes, and whether any byte is non-ASCII (then the tally is not used).
#[derive(Default, Debug, PartialEq, Eq)]
struct AsciiTally {
    extra: usize,
    single: usize,
    double: usize,
    non_ascii: bool,
}

/// Per byte, four counters packed in one word (extra escape characters, single
/// quotes, double quotes, non-ASCII), so the byte path adds one table entry a byte.
const fn byte_tally(b: u8) -> u32 {
    // `\\ \t \n \r` take one extra character, other controls three (`\x01`).
    let extra = match b {
        b'\\' | b'\t' | b'\n' | b'\r' => 1,
        0..=0x1f | 0x7f => 3,
        _ => 0,
    };
    extra | ((b == b'\'') as u32) << 8 | ((b == b'"') as u32) << 16 | ((b >= 0x80) as u32) << 24
}

static BYTE_TALLY: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = byte_tally(b as u8);
        b += 1;
    }
    t
};

impl AsciiTally {
    /// Byte by byte: the portable path, the one for short strings (names, ids, keys;
    /// cheaper than setting up a vector), and the reference the SIMD ones are tested
    /// against.
    fn of_bytes(bytes: &[u8]) -> Self {
        let mut t = AsciiTally::default();
        // 63 bytes at most per run: each packed counter stays under 256.
        for run in bytes.chunks(63) {
            let packed: u32 = run.iter().map(|&b| BYTE_TALLY[usize::from(b)]).sum();
            t.extra += (packed & 0xff) as usize;
            t.single += (packed >> 8 & 0xff) as usize;
            t.double += (packed >> 16 & 0xff) as usize;
            t.non_ascii |= packed >> 24 != 0;
        }
        t
    }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn ascii_tally(bytes: &[u8]) -> AsciiTally {
    AsciiTally::of_bytes(bytes)
}

/// Long tool arguments make this the hottest loop of the heuristic count: AVX2 where
/// the CPU has it, SSE2 (the x86_64 baseline) otherwise and for short strings. Kept
/// for `benches/bench_tokens.py`'s cold count: at 1,000 messages the byte table alone
/// gave 5.7-6.0x against langchain-core, these loops 6.7-8.3x (alternating builds).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn ascii_tally(bytes: &[u8]) -> AsciiTally {
    if bytes.len() < 16 {
        return AsciiTally::of_bytes(bytes);
    }
    if bytes.len() >= 64 && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU was just checked to have AVX2.
        return unsafe { simd::tally_avx2(bytes) };
    }
    // SAFETY: compiled only for targets that have SSE2 (the x86_64 baseline).
    unsafe { simd::tally_sse2(bytes) }
}

/// Per-lane byte counters, summed every 255 blocks (before they could overflow).
/// Controls and DEL cost 3 extra characters (`\x01`), `\t \n \r` 1 (`\n`), a
/// backslash 1. Bytes >= 0x80 compare as negative and count as controls too; any
/// such byte sends the string to the char-by-char path, so that miscount never
/// matters.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod simd {
    use super::AsciiTally;
    use std::arch::x86_64::*;

    /// A letter: padding made of it counts nothing.
    const PAD: u8 = b'a';

    impl AsciiTally {
        /// One run's per-class counts: controls (of which `tnr` are \t \n \r),
        /// backslashes, single and double quotes.
        fn add_counts(&mut self, ctrl: usize, tnr: usize, backslash: usize, quotes: [usize; 2]) {
            self.extra += 3 * ctrl - 2 * tnr + backslash;
            self.single += quotes[0];
            self.double += quotes[1];
        }

        fn merge(&mut self, other: AsciiTally) {
            self.extra += other.extra;
            self.single += other.single;
            self.double += other.double;
            self.non_ascii |= other.non_ascii;
        }
    }

    /// 16 bytes a step; the last few bytes as one more block, padded.
    #[target_feature(enable = "sse2")]
    pub fn tally_sse2(bytes: &[u8]) -> AsciiTally {
        let (blocks, tail) = bytes.as_chunks::<16>();
        let mut t = sse2_blocks(blocks);
        if !tail.is_empty() {
            let mut last = [PAD; 16];
            last[..tail.len()].copy_from_slice(tail);
            t.merge(sse2_blocks(&[last]));
        }
        t
    }

    /// The sum of the sixteen byte lanes.
    #[target_feature(enable = "sse2")]
    fn lane_sum(v: __m128i) -> usize {
        let s = _mm_sad_epu8(v, _mm_setzero_si128());
        (_mm_cvtsi128_si64(s) + i64::from(_mm_extract_epi16::<4>(s))) as usize
    }

    #[target_feature(enable = "sse2")]
    fn sse2_blocks(blocks: &[[u8; 16]]) -> AsciiTally {
        let splat = |b: u8| _mm_set1_epi8(b as i8);
        let zero = _mm_setzero_si128();
        let sum = lane_sum;
        let mut t = AsciiTally::default();
        let mut high = zero;
        for run in blocks.chunks(255) {
            let (mut ctrl, mut tnr, mut backslash, mut single, mut double) =
                (zero, zero, zero, zero, zero);
            for block in run {
                // SAFETY: `block` is a `&[u8; 16]`, valid for a 16-byte read; `loadu`
                // takes any alignment.
                let v = unsafe { _mm_loadu_si128(block.as_ptr().cast()) };
                let c = _mm_or_si128(
                    _mm_cmplt_epi8(v, splat(0x20)),
                    _mm_cmpeq_epi8(v, splat(0x7f)),
                );
                let w = _mm_or_si128(
                    _mm_or_si128(
                        _mm_cmpeq_epi8(v, splat(b'\t')),
                        _mm_cmpeq_epi8(v, splat(b'\n')),
                    ),
                    _mm_cmpeq_epi8(v, splat(b'\r')),
                );
                // A true lane is -1: subtracting it counts one.
                ctrl = _mm_sub_epi8(ctrl, c);
                tnr = _mm_sub_epi8(tnr, w);
                backslash = _mm_sub_epi8(backslash, _mm_cmpeq_epi8(v, splat(b'\\')));
                single = _mm_sub_epi8(single, _mm_cmpeq_epi8(v, splat(b'\'')));
                double = _mm_sub_epi8(double, _mm_cmpeq_epi8(v, splat(b'"')));
                high = _mm_or_si128(high, v);
            }
            t.add_counts(
                sum(ctrl),
                sum(tnr),
                sum(backslash),
                [sum(single), sum(double)],
            );
        }
        t.non_ascii = _mm_movemask_epi8(high) != 0;
        t
    }

    /// 32 bytes a step, the rest through the SSE2 path.
    #[target_feature(enable = "avx2")]
    pub fn tally_avx2(bytes: &[u8]) -> AsciiTally {
        let splat = |b: u8| _mm256_set1_epi8(b as i8);
        let zero = _mm256_setzero_si256();
        // The sum of the 32 byte lanes: each half's.
        let sum = |v: __m256i| {
            lane_sum(_mm256_castsi256_si128(v)) + lane_sum(_mm256_extracti128_si256::<1>(v))
        };
        let (blocks, rest) = bytes.as_chunks::<32>();
        let mut t = AsciiTally::default();
        let mut high = zero;
        for run in blocks.chunks(255) {
            let (mut ctrl, mut tnr, mut backslash, mut single, mut double) =
                (zero, zero, zero, zero, zero);
            for block in run {
                // SAFETY: `block` is a `&[u8; 32]`, valid for a 32-byte read; `loadu`
                // takes any alignment.
                let v = unsafe { _mm256_loadu_si256(block.as_ptr().cast()) };
                let c = _mm256_or_si256(
                    _mm256_cmpgt_epi8(splat(0x20), v),
                    _mm256_cmpeq_epi8(v, splat(0x7f)),
                );
                let w = _mm256_or_si256(
                    _mm256_or_si256(
                        _mm256_cmpeq_epi8(v, splat(b'\t')),
                        _mm256_cmpeq_epi8(v, splat(b'\n')),
                    ),
                    _mm256_cmpeq_epi8(v, splat(b'\r')),
                );
                ctrl = _mm256_sub_epi8(ctrl, c);
                tnr = _mm256_sub_epi8(tnr, w);
                backslash = _mm256_sub_epi8(backslash, _mm256_cmpeq_epi8(v, splat(b'\\')));
                single = _mm256_sub_epi8(single, _mm256_cmpeq_epi8(v, splat(b'\'')));
                double = _mm256_sub_epi8(double, _mm256_cmpeq_epi8(v, splat(b'"')));
                high = _mm256_or_si256(high, v);
            }
            t.add_counts(
                sum(ctrl),
                sum(tnr),
                sum(backslash),
                [sum(single), sum(double)],
            );
        }
        t.non_ascii = _mm256_movemask_epi8(high) != 0;
        t.merge(tally_sse2(rest));
        t
    }
}

/// Eight bytes with this value in each.
const fn splat8(b: u8) -> u64 {
    u64::from_ne_bytes([b; 8])
}

/// Whether every byte of the word is printable ASCII that `repr()` shows as is: no
/// control, DEL, non-ASCII byte, backslash or quote. Each test is exact for the word
/// as a whole (the classic has-less / has-zero-byte tricks).
fn plain_word(x: u64) -> bool {
    const HIGH: u64 = splat8(0x80);
    let has_zero = |y: u64| y.wrapping_sub(splat8(1)) & !y & HIGH != 0;
    let below_space = x.wrapping_sub(splat8(0x20)) & !x & HIGH != 0;
    // Adding 1 sets a byte's top bit from 0x7f up; bytes >= 0x80 have it already.
    let del_or_high = (x.wrapping_add(splat8(1)) | x) & HIGH != 0;
    !(below_space
        || del_or_high
        || has_zero(x ^ splat8(b'\\'))
        || has_zero(x ^ splat8(b'\''))
        || has_zero(x ^ splat8(b'"')))
}

/// Whether a string shorter than 16 bytes needs nothing but its two quotes: most
/// names, ids and keys. Overlapping loads cover every byte (some twice, which the
/// all-plain test does not mind).
#[inline]
fn short_and_plain(b: &[u8]) -> bool {
    let u64_at = |i: usize| {
        b.get(i..i + 8)
            .and_then(|w| w.try_into().ok())
            .map(u64::from_ne_bytes)
    };
    let u32_at = |i: usize| {
        b.get(i..i + 4)
            .and_then(|w| w.try_into().ok())
            .map(u32::from_ne_bytes)
    };
    let n = b.len();
    let word = match n {
        0 => return true,
        1..4 => {
            let (first, mid, last) = (b[0], b[n / 2], b[n - 1]);
            Some(u64::from_ne_bytes([
                first, mid, last, first, mid, last, first, mid,
            ]))
        }
        4..8 => u32_at(0)
            .zip(u32_at(n - 4))
            .map(|(lo, hi)| u64::from(lo) | u64::from(hi) << 32),
        8..16 => u64_at(0)
            .zip(u64_at(n - 8))
            .filter(|&(head, _)| plain_word(head))
            .map(|(_, tail)| tail),
        _ => None,
    };
    word.is_some_and(plain_word)
}

/// Length of Python's `repr()` of a string: quotes, escapes and all.
#[inline]
pub fn py_str_repr_len(s: &str) -> usize {
    // Inlined for the short plain strings most calls pass.
    if short_and_plain(s.as_bytes()) {
        return s.len() + 2;
    }
    tallied_repr_len(s)
}

#[inline(never)]
fn tallied_repr_len(s: &str) -> usize {
    let t = ascii_tally(s.as_bytes());
    // Python quotes with `"` only when the text has a `'` and no `"`.
    let quote = if t.single > 0 && t.double == 0 {
        '"'
    } else {
        '\''
    };
    if t.non_ascii {
        return repr_len_by_chars(s, quote);
    }
    let escaped_quotes = if quote == '\'' { t.single } else { 0 };
    2 + s.len() + t.extra + escaped_quotes
}

fn repr_len_by_chars(s: &str, quote: char) -> usize {
    let mut n = 2;
    for c in s.chars() {
        n += match c {
            '\\' | '\t' | '\n' | '\r' => 2,
            c if c == quote => 2,
            ' '..='~' => 1,
            c if (c as u32) < 0x20 || c as u32 == 0x7f => 4,
            c if py_printable(c) => 1,
            c if (c as u32) <= 0xff => 4,
            c if (c as u32) <= 0xffff => 6,
            _ => 10,
        };
    }
    n
}

/// Whether Python's `repr()` shows a non-ASCII character as is (else it escapes it).
fn py_printable(c: char) -> bool {
    let c = c as u32;
    NON_PRINTABLE
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_err()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn str_repr_matches_python() {
        // Values checked against CPython's repr().
        assert_eq!(py_str_repr_len("abc"), 5); // 'abc'
        assert_eq!(py_str_repr_len("it's"), 6); // "it's"
        assert_eq!(py_str_repr_len("it's \"x\""), 11); // 'it\'s "x"'
        assert_eq!(py_str_repr_len("a\nb\\"), 8); // 'a\nb\\'
        assert_eq!(py_str_repr_len("\x01"), 6); // '\x01'
        assert_eq!(py_str_repr_len("é✓"), 4); // 'é✓'
        assert_eq!(py_str_repr_len("\u{a0}"), 6); // '\xa0'
        assert_eq!(py_str_repr_len("\u{200b}"), 8); // '\u200b'
        assert_eq!(py_str_repr_len("\u{1342f}"), 12); // unassigned: '\U0001342f'
    }

    proptest::proptest! {
        #[test]
        fn simd_tally_agrees_with_bytes(bytes in proptest::collection::vec(0u8..=255, 0..600)) {
            let slow = AsciiTally::of_bytes(&bytes);
            let fast = ascii_tally(&bytes);
            proptest::prop_assert_eq!(fast.non_ascii, slow.non_ascii);
            if !slow.non_ascii {
                proptest::prop_assert_eq!(fast, slow);
            }
        }

        #[test]
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        fn each_simd_path_agrees_with_bytes(bytes in proptest::prop_oneof![
            // ASCII, where every count must agree; any bytes, where the flag must.
            proptest::collection::vec(0u8..=127, 0..300),
            proptest::collection::vec(0u8..=255, 0..300),
        ]) {
            let slow = AsciiTally::of_bytes(&bytes);
            // SAFETY: SSE2 is compiled in (the cfg above).
            let sse2 = unsafe { simd::tally_sse2(&bytes) };
            proptest::prop_assert_eq!(sse2.non_ascii, slow.non_ascii);
            if !slow.non_ascii {
                proptest::prop_assert_eq!(&sse2, &slow);
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU was just checked to have AVX2.
                let avx2 = unsafe { simd::tally_avx2(&bytes) };
                proptest::prop_assert_eq!(avx2.non_ascii, slow.non_ascii);
                if !slow.non_ascii {
                    proptest::prop_assert_eq!(&avx2, &slow);
                }
            }
        }

        #[test]
        fn simd_tally_agrees_on_ascii(s in "[\\x00-\\x7f]{0,5000}") {
            let slow = AsciiTally::of_bytes(s.as_bytes());
            proptest::prop_assert_eq!(ascii_tally(s.as_bytes()), slow);
        }

        #[test]
        fn byte_path_agrees_with_char_walk(s in "[\\x00-\\x7f]{0,300}") {
            // The portable path: whole strings through the packed table, runs of 63.
            let t = AsciiTally::of_bytes(s.as_bytes());
            let quote = if t.single > 0 && t.double == 0 { '"' } else { '\'' };
            let quotes = if quote == '\'' { t.single } else { 0 };
            proptest::prop_assert!(!t.non_ascii);
            proptest::prop_assert_eq!(2 + s.len() + t.extra + quotes, repr_len_by_chars(&s, quote));
        }

        #[test]
        fn plain_check_agrees_with_bytes(bytes in proptest::collection::vec(proptest::prop_oneof![
            // Mostly plain letters, so that the all-plain answer is common too.
            8 => 0x20u8..=0x7e,
            1 => 0u8..=255,
        ], 0..20)) {
            let t = AsciiTally::of_bytes(&bytes);
            let plain = bytes.len() < 16 && !t.non_ascii && t.extra + t.single + t.double == 0;
            proptest::prop_assert_eq!(short_and_plain(&bytes), plain);
        }

        #[test]
        fn ascii_fast_path_agrees_with_char_walk(s in "[\\x00-\\x7f]{0,64}") {
            let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
            proptest::prop_assert_eq!(py_str_repr_len(&s), repr_len_by_chars(&s, quote));
        }
    }

    #[test]
    fn value_repr_matches_python() {
        // repr({'a': [1, 2.5, None, True], 'b': {}}) == "{'a': [1, 2.5, None, True], 'b': {}}"
        let v = json!({"a": [1, 2.5, null, true], "b": {}});
        assert_eq!(py_repr_len(&v), 36);
        assert_eq!(py_repr_len(&json!(1e-5)), "1e-05".len());
        assert_eq!(py_repr_len(&json!(1e16)), "1e+16".len());
        assert_eq!(py_repr_len(&json!(3.0)), "3.0".len());
        assert_eq!(py_repr_len(&json!(-0.001)), "-0.001".len());
        assert_eq!(py_repr_len(&json!(123.456)), "123.456".len());
        assert_eq!(py_repr_len(&json!(1.5e300)), "1.5e+300".len());
        assert_eq!(py_repr_len(&json!(-2.0)), "-2.0".len());
    }

    #[test]
    fn tool_calls_repr_matches_python() {
        // repr([{'name': 'ls', 'args': {'path': '/'}, 'id': 'c1', 'type': 'tool_call'}])
        let calls = [ToolCall {
            id: Some("c1".into()),
            name: "ls".into(),
            args: json!({"path": "/"}).into(),
        }];
        let expected = "[{'name': 'ls', 'args': {'path': '/'}, 'id': 'c1', 'type': 'tool_call'}]";
        assert_eq!(tool_calls_repr_len(&calls), expected.len());
        assert_eq!(tool_calls_repr_len(&[]), 2);
    }
}
