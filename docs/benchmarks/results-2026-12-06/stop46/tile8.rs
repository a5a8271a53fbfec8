//! What an 8-bit first stage would cost against the half tile: 100k rows of
//! 384 values, 2 threads, blocks of 32 rows, best of 20 passes, for 1, 4 and
//! 16 questions.
//!
//! - `half`: f16 rows, f32 questions, AVX-512 (the shipped kernel's shape:
//!   row after row for one group, 4 rows x 4 questions side by side above).
//! - `i8xf32`: i8 rows widened to f32, f32 questions (half the bytes of f16).
//! - `i8xu8 vnni`: i8 rows, questions quantised to u8 (offset 128), integer
//!   dots with `vpdpbusd` (64 products an instruction); exact in i32.
//!
//! `rustc -O -C target-cpu=native tile8.rs && ./tile8`
#![allow(clippy::all)]
use std::arch::x86_64::*;
use std::time::Instant;

const DIMS: usize = 384;
const ROWS: usize = 100_000;
const THREADS: usize = 2;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
}

fn f16_bits(x: f32) -> u16 {
    // Round to nearest for normal values (enough for a cost test).
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32 - 127 + 15;
    if exp <= 0 {
        return sign;
    }
    let mant = ((b >> 13) & 0x3ff) as u16;
    sign | ((exp as u16) << 10) | mant
}

#[target_feature(enable = "avx512f,f16c")]
unsafe fn half_group(rows: &[u16], n: usize, qs: &[&[f32]], out: &mut [f32]) {
    // R = 4 rows x L questions side by side (L <= 4), or row after row for one group.
    let nrows = rows.len() / n;
    let nq = qs.len();
    let mut q0 = 0;
    while q0 < nq {
        let g = (nq - q0).min(4);
        let mut r = 0;
        while r + 4 <= nrows {
            let mut acc = [[_mm512_setzero_ps(); 4]; 4];
            let mut i = 0;
            while i < n {
                let h: [__m512; 4] = std::array::from_fn(|k| {
                    _mm512_cvtph_ps(_mm256_loadu_si256(rows.as_ptr().add((r + k) * n + i).cast()))
                });
                for l in 0..g {
                    let x = _mm512_loadu_ps(qs[q0 + l].as_ptr().add(i));
                    for k in 0..4 {
                        acc[k][l] = _mm512_fmadd_ps(x, h[k], acc[k][l]);
                    }
                }
                i += 16;
            }
            for k in 0..4 {
                for l in 0..g {
                    out[(r + k) * nq + q0 + l] = _mm512_reduce_add_ps(acc[k][l]);
                }
            }
            r += 4;
        }
        q0 += g;
    }
}

#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn i8f32_group(rows: &[i8], n: usize, qs: &[&[f32]], out: &mut [f32]) {
    let nrows = rows.len() / n;
    let nq = qs.len();
    let mut q0 = 0;
    while q0 < nq {
        let g = (nq - q0).min(4);
        let mut r = 0;
        while r + 4 <= nrows {
            let mut acc = [[_mm512_setzero_ps(); 4]; 4];
            let mut i = 0;
            while i < n {
                let h: [__m512; 4] = std::array::from_fn(|k| {
                    _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
                        rows.as_ptr().add((r + k) * n + i).cast(),
                    )))
                });
                for l in 0..g {
                    let x = _mm512_loadu_ps(qs[q0 + l].as_ptr().add(i));
                    for k in 0..4 {
                        acc[k][l] = _mm512_fmadd_ps(x, h[k], acc[k][l]);
                    }
                }
                i += 16;
            }
            for k in 0..4 {
                for l in 0..g {
                    out[(r + k) * nq + q0 + l] = _mm512_reduce_add_ps(acc[k][l]);
                }
            }
            r += 4;
        }
        q0 += g;
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn vnni_group(rows: &[i8], n: usize, qs: &[&[u8]], out: &mut [i32]) {
    let nrows = rows.len() / n;
    let nq = qs.len();
    let mut q0 = 0;
    while q0 < nq {
        let g = (nq - q0).min(4);
        let mut r = 0;
        while r + 4 <= nrows {
            let mut acc = [[_mm512_setzero_si512(); 4]; 4];
            let mut i = 0;
            while i < n {
                let v: [__m512i; 4] = std::array::from_fn(|k| {
                    _mm512_loadu_si512(rows.as_ptr().add((r + k) * n + i).cast())
                });
                for l in 0..g {
                    let x = _mm512_loadu_si512(qs[q0 + l].as_ptr().add(i).cast());
                    for k in 0..4 {
                        acc[k][l] = _mm512_dpbusd_epi32(acc[k][l], x, v[k]);
                    }
                }
                i += 64;
            }
            for k in 0..4 {
                for l in 0..g {
                    out[(r + k) * nq + q0 + l] = _mm512_reduce_add_epi32(acc[k][l]);
                }
            }
            r += 4;
        }
        q0 += g;
    }
}

fn best<F: Fn(usize, usize) -> f32 + Sync>(f: F) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..20 {
        let t = Instant::now();
        std::thread::scope(|s| {
            let chunk = ROWS.div_ceil(THREADS);
            for t in 0..THREADS {
                let f = &f;
                s.spawn(move || {
                    let mut sink = 0.0f32;
                    let (a, b) = (t * chunk, ((t + 1) * chunk).min(ROWS));
                    let mut r = a;
                    while r < b {
                        let e = (r + 32).min(b);
                        sink += f(r, e);
                        r = e;
                    }
                    std::hint::black_box(sink);
                });
            }
        });
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn main() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let values: Vec<f32> = (0..ROWS * DIMS).map(|_| rng.next() * 0.2).collect();
    let halves: Vec<u16> = values.iter().map(|&x| f16_bits(x)).collect();
    let bytes: Vec<i8> = values.iter().map(|&x| (x * 1200.0).round().clamp(-127.0, 127.0) as i8).collect();
    drop(values);
    for nq in [1usize, 4, 16] {
        let queries: Vec<Vec<f32>> = (0..nq).map(|_| (0..DIMS).map(|_| rng.next() * 0.1).collect()).collect();
        let qs: Vec<&[f32]> = queries.iter().map(Vec::as_slice).collect();
        let q8: Vec<Vec<u8>> = queries
            .iter()
            .map(|q| q.iter().map(|&x| ((x * 2540.0).round().clamp(-127.0, 127.0) as i32 + 128) as u8).collect())
            .collect();
        let q8s: Vec<&[u8]> = q8.iter().map(Vec::as_slice).collect();
        let half = best(|a, e| {
            let mut out = [0f32; 32 * 16];
            unsafe { half_group(&halves[a * DIMS..e * DIMS], DIMS, &qs, &mut out) };
            out[0]
        });
        let i8f = best(|a, e| {
            let mut out = [0f32; 32 * 16];
            unsafe { i8f32_group(&bytes[a * DIMS..e * DIMS], DIMS, &qs, &mut out) };
            out[0]
        });
        let vnni = best(|a, e| {
            let mut out = [0i32; 32 * 16];
            unsafe { vnni_group(&bytes[a * DIMS..e * DIMS], DIMS, &q8s, &mut out) };
            out[0] as f32
        });
        println!(
            "{nq:>2} question(s): half {:6.2} ms | i8xf32 {:6.2} ms | i8xu8 vnni {:6.2} ms",
            half * 1e3,
            i8f * 1e3,
            vnni * 1e3
        );
    }
}
