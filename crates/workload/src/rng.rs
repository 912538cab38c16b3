//! Deterministic randomness shared by both backends: the workload's "random" data and its
//! random and Zipf access streams come from the same generators in the model and on the
//! live kernel, so both see the same addresses and bytes for the same seed.

/// SplitMix64: a small deterministic PRNG (the workload's "random" data and streams).
#[derive(Clone)]
pub struct Rng(pub u64);
impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut r = Rng(seed ^ 0x9e37_79b9_7f4a_7c15);
        r.next_u64();
        r
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Zipf sampler over 1..=n with exponent `s` (rejection-inversion, Hörmann & Derflinger 1996),
/// valid for any s > 0 and O(1) per sample.
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}
impl Zipf {
    pub fn new(n: u64, s: f64) -> Zipf {
        let n = n.max(1) as f64;
        let mut z = Zipf { n, s, h_x1: 0.0, h_n: 0.0, cut: 0.0 };
        z.h_x1 = z.h(1.5) - 1.0;
        z.h_n = z.h(n + 0.5);
        z.cut = 2.0 - z.h_inv(z.h(2.5) - (-s * 2f64.ln()).exp());
        z
    }
    fn helper1(x: f64) -> f64 {
        if x.abs() > 1e-8 {
            x.ln_1p() / x
        } else {
            1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
        }
    }
    fn helper2(x: f64) -> f64 {
        if x.abs() > 1e-8 {
            x.exp_m1() / x
        } else {
            1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x))
        }
    }
    fn h(&self, x: f64) -> f64 {
        let lx = x.ln();
        Self::helper2((1.0 - self.s) * lx) * lx
    }
    fn h_inv(&self, x: f64) -> f64 {
        let mut t = x * (1.0 - self.s);
        if t < -1.0 {
            t = -1.0;
        }
        (Self::helper1(t) * x).exp()
    }
    /// A sample in 0..n (rank - 1).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + rng.unit() * (self.h_x1 - self.h_n);
            let x = self.h_inv(u);
            let mut k = (x + 0.5).floor();
            if k < 1.0 {
                k = 1.0;
            } else if k > self.n {
                k = self.n;
            }
            if k - x <= self.cut || u >= self.h(k + 0.5) - (-(self.s) * k.ln()).exp() {
                return k as u64 - 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn zipf_is_skewed_and_in_range() {
        let z = Zipf::new(1000, 0.99);
        let mut r = Rng::new(1);
        let mut hist = vec![0u32; 1000];
        for _ in 0..100_000 {
            let k = z.sample(&mut r);
            assert!(k < 1000);
            hist[k as usize] += 1;
        }
        assert!(hist[0] > hist[10] && hist[10] > hist[500]);
        let z = Zipf::new(10, 2.5);
        for _ in 0..1000 {
            assert!(z.sample(&mut r) < 10);
        }
    }
}
