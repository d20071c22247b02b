//! Whether a candidate differs from a base on one metric: the ratio of
//! their means with a bootstrap confidence interval, a Mann–Whitney U test
//! on the samples, and a verdict that respects the metric's direction.
//!
//! A difference is reported only when both agree: the test's two-sided p
//! is at most 1 − level and the interval leaves out 1. With few samples
//! the test cannot reach the level at all (two against two: the smallest
//! two-sided p is 1/3); the verdict then says so instead of "no difference".

use serde::Serialize;

/// Whether more of a metric is better (IOPS) or worse (latency, instructions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    HigherIsBetter,
    LowerIsBetter,
}

/// What the samples say about the candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Better,
    Worse,
    /// Enough samples to detect a difference at the level, and none was.
    NoDifference,
    /// So few samples that even completely separated ones could not be
    /// significant at the level.
    TooFewSamples,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoDifference => "no difference detected",
            Verdict::TooFewSamples => "too few samples to tell",
        }
    }
}

/// One metric's comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub n_base: usize,
    pub n_candidate: usize,
    pub base_mean: f64,
    pub candidate_mean: f64,
    /// mean(candidate) / mean(base).
    pub ratio: f64,
    /// The bootstrap percentile interval of the ratio at the level.
    pub ratio_lo: f64,
    pub ratio_hi: f64,
    /// Mann–Whitney U's two-sided p.
    pub p: f64,
    /// The smallest two-sided p these sample sizes allow.
    pub p_min: f64,
    pub verdict: Verdict,
}

impl Comparison {
    /// How much worse the candidate is, in percent of the base (negative
    /// when it is better), by the metric's direction.
    pub fn worse_by_pct(&self, dir: Direction) -> f64 {
        match dir {
            Direction::HigherIsBetter => (1.0 - self.ratio) * 100.0,
            Direction::LowerIsBetter => (self.ratio - 1.0) * 100.0,
        }
    }
}

/// Bootstrap resamples per interval.
const RESAMPLES: usize = 10_000;
/// The bootstrap's seed: the same samples give the same interval.
const SEED: u64 = 0x1f0_5eed;
/// Up to this many arrangements of the pooled samples, the Mann–Whitney
/// p is exact (every arrangement counted); above, the normal
/// approximation with the tie correction.
const EXACT_LIMIT: u64 = 200_000;

/// Compares `candidate` with `base` at `level` (e.g. 0.95). Non-finite
/// samples are left out; `None` when either side has none or the base's
/// mean is not positive.
pub fn compare(base: &[f64], candidate: &[f64], dir: Direction, level: f64) -> Option<Comparison> {
    let b: Vec<f64> = base.iter().copied().filter(|x| x.is_finite()).collect();
    let c: Vec<f64> = candidate
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    if b.is_empty() || c.is_empty() {
        return None;
    }
    let (bm, cm) = (mean(&b), mean(&c));
    if bm <= 0.0 {
        return None;
    }
    let ratio = cm / bm;
    let (lo, hi) = bootstrap_ratio(&b, &c, level);
    let (p, p_min) = mann_whitney(&b, &c);
    let alpha = 1.0 - level;
    let verdict = if p_min > alpha {
        Verdict::TooFewSamples
    } else if p <= alpha && (hi < 1.0 || lo > 1.0) {
        match (dir, ratio > 1.0) {
            (Direction::HigherIsBetter, true) | (Direction::LowerIsBetter, false) => {
                Verdict::Better
            }
            _ => Verdict::Worse,
        }
    } else {
        Verdict::NoDifference
    };
    Some(Comparison {
        n_base: b.len(),
        n_candidate: c.len(),
        base_mean: bm,
        candidate_mean: cm,
        ratio,
        ratio_lo: lo,
        ratio_hi: hi,
        p,
        p_min,
        verdict,
    })
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// SplitMix64: a small, fixed, well-mixed generator for the resampling.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The percentile interval at `level` of mean(c*)/mean(b*) over
/// resamples of each side with replacement.
fn bootstrap_ratio(b: &[f64], c: &[f64], level: f64) -> (f64, f64) {
    let mut rng = Rng(SEED);
    let mut resample = |xs: &[f64]| -> f64 {
        (0..xs.len()).map(|_| xs[rng.below(xs.len())]).sum::<f64>() / xs.len() as f64
    };
    let mut ratios: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let bm = resample(b);
            resample(c) / bm
        })
        .filter(|r| r.is_finite())
        .collect();
    if ratios.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    let at =
        |q: f64| ratios[((q * (ratios.len() - 1) as f64).round() as usize).min(ratios.len() - 1)];
    (at(tail), at(1.0 - tail))
}

/// The ranks of `xs` (1-based, ties given their mean rank).
fn ranks(xs: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    idx.sort_by(|&i, &j| xs[i].total_cmp(&xs[j]));
    let mut r = vec![0.0; xs.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && xs[idx[j + 1]] == xs[idx[i]] {
            j += 1;
        }
        let mid = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = mid;
        }
        i = j + 1;
    }
    r
}

/// n choose k, as a float (it passes 2^64 from 68 samples on).
fn choose(n: u64, k: u64) -> f64 {
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// Mann–Whitney U's two-sided p for `b` against `c`, and the smallest p
/// these sizes allow (both samples apart, no ties).
fn mann_whitney(b: &[f64], c: &[f64]) -> (f64, f64) {
    let (n1, n2) = (b.len() as u64, c.len() as u64);
    let pooled: Vec<f64> = b.iter().chain(c).copied().collect();
    let r = ranks(&pooled);
    let total = choose(n1 + n2, n1);
    let p_min = (2.0 / total).min(1.0);
    // The rank sum of the base, centred: its distance from its mean under
    // the null hypothesis.
    let centre = n1 as f64 * (n1 + n2 + 1) as f64 / 2.0;
    let observed = (r[..b.len()].iter().sum::<f64>() - centre).abs();
    if total <= EXACT_LIMIT as f64 {
        let mut extreme = 0u64;
        let mut pick: Vec<usize> = (0..b.len()).collect();
        loop {
            let s: f64 = pick.iter().map(|&i| r[i]).sum();
            if (s - centre).abs() >= observed - 1e-9 {
                extreme += 1;
            }
            if !next_combination(&mut pick, pooled.len()) {
                break;
            }
        }
        return (extreme as f64 / total, p_min);
    }
    // Normal approximation, ties corrected, with continuity correction.
    let n = (n1 + n2) as f64;
    let mut sorted = pooled.clone();
    sorted.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let j = sorted[i..].iter().take_while(|&&x| x == sorted[i]).count();
        ties += (j as f64).powi(3) - j as f64;
        i += j;
    }
    let var = n1 as f64 * n2 as f64 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var <= 0.0 {
        return (1.0, p_min);
    }
    let z = ((observed - 0.5).max(0.0)) / var.sqrt();
    ((2.0 * normal_upper(z)).min(1.0), p_min)
}

/// The next k-combination of 0..n in lexicographic order; false after the last.
fn next_combination(pick: &mut [usize], n: usize) -> bool {
    let k = pick.len();
    for i in (0..k).rev() {
        if pick[i] < n - k + i {
            pick[i] += 1;
            for j in i + 1..k {
                pick[j] = pick[j - 1] + 1;
            }
            return true;
        }
    }
    false
}

/// P(Z > z) for a standard normal Z (Abramowitz–Stegun 7.1.26 via erfc).
fn normal_upper(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    erfc / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` samples around `centre` with a deterministic spread of ±`spread`.
    fn samples(centre: f64, spread: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Rng(seed);
        (0..n)
            .map(|_| centre + spread * ((rng.next() % 2001) as f64 / 1000.0 - 1.0))
            .collect()
    }

    #[test]
    fn a_real_shift_is_detected_in_the_metrics_direction() {
        let base = samples(1000.0, 30.0, 8, 1);
        let faster = samples(1100.0, 30.0, 8, 2);
        let c = compare(&base, &faster, Direction::HigherIsBetter, 0.95).unwrap();
        assert_eq!(c.verdict, Verdict::Better, "{c:?}");
        assert!(c.ratio_lo > 1.0 && c.ratio_hi < 1.2 && c.p < 0.01, "{c:?}");
        let c = compare(&base, &faster, Direction::LowerIsBetter, 0.95).unwrap();
        assert_eq!(c.verdict, Verdict::Worse);
        assert!((c.worse_by_pct(Direction::LowerIsBetter) - (c.ratio - 1.0) * 100.0).abs() < 1e-9);
        let c = compare(&faster, &base, Direction::HigherIsBetter, 0.95).unwrap();
        assert_eq!(c.verdict, Verdict::Worse);
        assert!(c.worse_by_pct(Direction::HigherIsBetter) > 5.0);
    }

    #[test]
    fn identical_distributions_are_no_difference() {
        // Pairs drawn from one distribution: a difference is reported in
        // at most about 1 − level of them (both the test and the interval
        // must agree, so fewer).
        let pairs = 100;
        let found = (0..pairs)
            .filter(|&i| {
                let base = samples(1000.0, 50.0, 10, 2 * i);
                let same = samples(1000.0, 50.0, 10, 2 * i + 1);
                compare(&base, &same, Direction::HigherIsBetter, 0.95)
                    .unwrap()
                    .verdict
                    != Verdict::NoDifference
            })
            .count();
        assert!(found <= pairs as usize / 10, "{found} of {pairs}");
        // The very same samples: p is 1 and the interval holds 1.
        let base = samples(1000.0, 50.0, 10, 3);
        let c = compare(&base, &base, Direction::LowerIsBetter, 0.95).unwrap();
        assert_eq!((c.verdict, c.p), (Verdict::NoDifference, 1.0));
    }

    #[test]
    fn two_against_two_cannot_be_significant_and_says_so() {
        let c = compare(
            &[100.0, 101.0],
            &[200.0, 201.0],
            Direction::HigherIsBetter,
            0.95,
        )
        .unwrap();
        assert_eq!(c.verdict, Verdict::TooFewSamples, "{c:?}");
        assert!((c.p_min - 1.0 / 3.0).abs() < 1e-12 && (c.p - 1.0 / 3.0).abs() < 1e-12);
        // Four against four fully apart reaches 2/70 < 0.05.
        let c = compare(
            &[100.0, 101.0, 102.0, 103.0],
            &[200.0, 201.0, 202.0, 203.0],
            Direction::HigherIsBetter,
            0.95,
        )
        .unwrap();
        assert_eq!(c.verdict, Verdict::Better);
        assert!((c.p - 2.0 / 70.0).abs() < 1e-12);
        // ... but not at 99 %.
        let c = compare(
            &[100.0, 101.0, 102.0, 103.0],
            &[200.0, 201.0, 202.0, 203.0],
            Direction::HigherIsBetter,
            0.99,
        )
        .unwrap();
        assert_eq!(c.verdict, Verdict::TooFewSamples);
    }

    #[test]
    fn the_exact_test_matches_tables_and_the_approximation_agrees() {
        // U = 2 for sizes 5 and 5: P(U <= 2) = 4/252, two-sided 8/252.
        let (p, _) = mann_whitney(&[1.0, 2.0, 3.0, 5.0, 6.0], &[4.0, 7.0, 8.0, 9.0, 10.0]);
        assert!((p - 8.0 / 252.0).abs() < 1e-12, "{p}");
        // Large samples take the normal approximation; a shift by a
        // third of the spread over 40 each is clearly significant.
        let (p, p_min) = mann_whitney(&samples(100.0, 10.0, 40, 5), &samples(110.0, 10.0, 40, 6));
        assert!(p < 1e-4 && p_min < 1e-20, "{p}");
        assert!((normal_upper(1.959_964) - 0.025).abs() < 1e-4);
    }

    #[test]
    fn missing_or_unusable_samples_give_none() {
        assert!(compare(&[], &[1.0], Direction::HigherIsBetter, 0.95).is_none());
        assert!(compare(&[f64::NAN], &[1.0], Direction::HigherIsBetter, 0.95).is_none());
        assert!(compare(&[0.0, 0.0], &[1.0, 1.0], Direction::HigherIsBetter, 0.95).is_none());
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), [3.5, 1.0, 3.5, 2.0]);
    }
}
