//! Whether a candidate differs from a base, metric by metric: the ratio
//! of their medians with a bootstrap interval, a rank-sum test
//! (Mann–Whitney U, exact) on the samples, Holm's correction over every
//! metric judged at once, and a verdict that respects each metric's
//! direction.
//!
//! A metric is better or worse only when the test is significant after
//! the correction and the test and the ratio of medians point the same
//! way. A mean can be moved by a few outliers against most samples; the
//! median and the ranks cannot.
//!
//! With few samples the test cannot reach the level at all (two against
//! two: the smallest two-sided p is 1/3), and the correction asks more of
//! each metric the more are judged: [`can_judge`] is what the verdict and
//! `compare`'s check of `--boots` both ask.

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
    /// The test is significant but the ratio of medians says the
    /// other way, or no change.
    Inconsistent,
    /// Enough samples to detect a difference at the corrected level, and
    /// none was.
    NoDifference,
    /// So few samples that even completely separated ones could not be
    /// significant at the corrected level.
    TooFewSamples,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Inconsistent => "test and medians disagree",
            Verdict::NoDifference => "no difference detected",
            Verdict::TooFewSamples => "too few samples to tell",
        }
    }

    /// Whether the verdict leaves the metric unjudged: too few samples,
    /// or a test and medians that disagree.
    pub fn unjudged(self) -> bool {
        matches!(self, Verdict::TooFewSamples | Verdict::Inconsistent)
    }
}

/// One metric's comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub n_base: usize,
    pub n_candidate: usize,
    pub base_median: f64,
    pub candidate_median: f64,
    /// median(candidate) / median(base).
    pub ratio: f64,
    /// The bootstrap percentile interval of the ratio at the level, for
    /// this metric alone (not corrected).
    pub ratio_lo: f64,
    pub ratio_hi: f64,
    /// The candidate's rank sum less its mean were both sides alike:
    /// positive when its samples rank above the base's.
    pub rank_shift: f64,
    /// The rank-sum test's two-sided p, exact.
    pub p: f64,
    /// The smallest two-sided p these sample sizes allow.
    pub p_min: f64,
    /// How many metrics were judged together.
    pub family: usize,
    /// `p` adjusted by Holm's procedure over the family: the metric is
    /// significant when this is at most 1 − level.
    pub p_holm: f64,
    pub verdict: Verdict,
}

impl Comparison {
    /// How much worse the candidate's median is, in percent of the base's
    /// (negative when it is better), by the metric's direction.
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

/// The smallest two-sided p of the rank-sum test for `n1` against `n2`
/// samples: both sides entirely apart, no ties (1 without samples).
pub fn p_min(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    (2.0 / choose((n1 + n2) as u64, n1 as u64)).min(1.0)
}

/// Whether `n1` against `n2` samples can be significant at `level` when
/// `family` metrics are judged together: Holm's procedure holds a metric
/// that is the only one to differ to (1 − level) / family, and the test
/// reaches at best [`p_min`].
pub fn can_judge(n1: usize, n2: usize, level: f64, family: usize) -> bool {
    p_min(n1, n2) <= (1.0 - level) / family.max(1) as f64
}

/// The fewest samples a side (as many on each) that [`can_judge`] at
/// `level` over `family` metrics; `None` for a level that nothing reaches.
pub fn fewest_samples(level: f64, family: usize) -> Option<usize> {
    // 2 / C(2n, n) falls below any positive level long before this.
    (1..=500).find(|&n| can_judge(n, n, level, family))
}

/// Compares each metric's `(base, candidate, direction)` at `level`
/// (e.g. 0.95), the metrics judged together: Holm's procedure over those
/// that could be compared. Non-finite samples are left out; a metric is
/// `None` when either side has none or the base's median is not positive.
pub fn compare_family(
    metrics: &[(&[f64], &[f64], Direction)],
    level: f64,
) -> Vec<Option<Comparison>> {
    let mut out: Vec<Option<Comparison>> = metrics
        .iter()
        .map(|&(b, c, _)| measure(b, c, level))
        .collect();
    let family = out.iter().flatten().count();
    let mut adjusted = holm(&out.iter().flatten().map(|c| c.p).collect::<Vec<_>>()).into_iter();
    for (c, &(_, _, dir)) in out.iter_mut().zip(metrics) {
        let Some(c) = c else { continue };
        c.family = family;
        c.p_holm = adjusted.next().expect("an adjusted p per comparison");
        c.verdict = verdict(c, dir, level);
    }
    out
}

/// Everything of one metric's comparison but the family's part.
fn measure(base: &[f64], candidate: &[f64], level: f64) -> Option<Comparison> {
    let b: Vec<f64> = base.iter().copied().filter(|x| x.is_finite()).collect();
    let c: Vec<f64> = candidate
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    if b.is_empty() || c.is_empty() {
        return None;
    }
    let (bm, cm) = (median(&b), median(&c));
    if bm <= 0.0 {
        return None;
    }
    let (lo, hi) = bootstrap_ratio(&b, &c, level);
    let (p, rank_shift) = rank_sum(&b, &c);
    Some(Comparison {
        n_base: b.len(),
        n_candidate: c.len(),
        base_median: bm,
        candidate_median: cm,
        ratio: cm / bm,
        ratio_lo: lo,
        ratio_hi: hi,
        rank_shift,
        p,
        p_min: p_min(b.len(), c.len()),
        family: 1,
        p_holm: p,
        verdict: Verdict::NoDifference,
    })
}

/// The verdict on `c`, whose family's part is set.
fn verdict(c: &Comparison, dir: Direction, level: f64) -> Verdict {
    if c.p_holm <= 1.0 - level {
        // A p below 1 has a rank sum off its mean.
        let up = c.rank_shift > 0.0;
        let agrees = if up { c.ratio > 1.0 } else { c.ratio < 1.0 };
        if !agrees {
            return Verdict::Inconsistent;
        }
        match (dir, up) {
            (Direction::HigherIsBetter, true) | (Direction::LowerIsBetter, false) => {
                Verdict::Better
            }
            _ => Verdict::Worse,
        }
    } else if !can_judge(c.n_base, c.n_candidate, level, c.family) {
        Verdict::TooFewSamples
    } else {
        Verdict::NoDifference
    }
}

/// Holm's step-down adjusted p of each of `ps`, in their order: the k-th
/// smallest p times (m − k + 1), at most 1, and never below the one
/// before it. A metric is significant at α when its adjusted p is at most
/// α; the family-wise error rate is then at most α.
pub fn holm(ps: &[f64]) -> Vec<f64> {
    let m = ps.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| ps[i].total_cmp(&ps[j]));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (k, &i) in order.iter().enumerate() {
        running = running.max(((m - k) as f64 * ps[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// The median of `xs` (not empty): the mean of the middle two for an
/// even count.
fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
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

/// The percentile interval at `level` of median(c*)/median(b*) over
/// resamples of each side with replacement.
fn bootstrap_ratio(b: &[f64], c: &[f64], level: f64) -> (f64, f64) {
    let mut rng = Rng(SEED);
    let mut scratch = Vec::new();
    let mut resample = |xs: &[f64]| -> f64 {
        scratch.clear();
        scratch.extend((0..xs.len()).map(|_| xs[rng.below(xs.len())]));
        median(&scratch)
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

/// The rank-sum test (Mann–Whitney U) of `c` against `b`, exact: the
/// two-sided p over every way of choosing which of the pooled samples
/// are the base's (ties keep their mean ranks), and the candidate's rank
/// sum less its mean over those ways.
fn rank_sum(b: &[f64], c: &[f64]) -> (f64, f64) {
    let (n1, n) = (b.len(), b.len() + c.len());
    let pooled: Vec<f64> = b.iter().chain(c).copied().collect();
    // Mean ranks are whole or halves: twice them are whole.
    let twice: Vec<usize> = ranks(&pooled)
        .iter()
        .map(|r| (2.0 * r).round() as usize)
        .collect();
    let top: usize = twice.iter().sum();
    // ways[k][s]: the ways to choose k of the samples seen so far whose
    // doubled ranks add up to s.
    let mut ways = vec![vec![0.0f64; top + 1]; n1 + 1];
    ways[0][0] = 1.0;
    for (i, &t) in twice.iter().enumerate() {
        for k in (1..=n1.min(i + 1)).rev() {
            let (fewer, more) = ways.split_at_mut(k);
            for (s, w) in more[0].iter_mut().enumerate().skip(t) {
                *w += fewer[k - 1][s - t];
            }
        }
    }
    let total: f64 = ways[n1].iter().sum();
    // Twice the base's rank sum, and twice its mean: n1 (n + 1) / 2.
    let observed = twice[..n1].iter().sum::<usize>() as i64;
    let centre = (n1 * (n + 1)) as i64;
    let off = (observed - centre).abs();
    let extreme: f64 = ways[n1]
        .iter()
        .enumerate()
        .filter(|&(s, _)| (s as i64 - centre).abs() >= off)
        .map(|(_, w)| w)
        .sum();
    // The rank sums add up to n (n + 1) / 2: the candidate's is off its
    // mean by as much as the base's, the other way.
    ((extreme / total).min(1.0), (centre - observed) as f64 / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `candidate` against `base` at `level`, the only metric judged.
    fn compare(base: &[f64], candidate: &[f64], dir: Direction, level: f64) -> Option<Comparison> {
        compare_family(&[(base, candidate, dir)], level)
            .pop()
            .flatten()
    }

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
        assert!((c.p - 2.0 / 70.0).abs() < 1e-12 && c.p_holm == c.p);
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
    fn the_exact_test_matches_tables_and_reaches_p_min_at_any_size() {
        // U = 2 for sizes 5 and 5: P(U <= 2) = 4/252, two-sided 8/252.
        let (p, shift) = rank_sum(&[1.0, 2.0, 3.0, 5.0, 6.0], &[4.0, 7.0, 8.0, 9.0, 10.0]);
        assert!((p - 8.0 / 252.0).abs() < 1e-12, "{p}");
        // The candidate's ranks 4, 7, 8, 9, 10: 38 against a mean of 27.5.
        assert_eq!(shift, 10.5);
        // Ties: 1, 2, 2 against 2, 3 ranks 1, 3, 3 against 3, 5; the
        // base's sum 7 is 2 off its mean 9. Of the ten ways to choose
        // three of 1, 3, 3, 3, 5, three add up to 7 and three to 11.
        let (p, _) = rank_sum(&[1.0, 2.0, 2.0], &[2.0, 3.0]);
        assert!((p - 0.6).abs() < 1e-12, "{p}");
        // Samples entirely apart reach p_min exactly, however many (the
        // normal approximation's tail is far above it past 10 a side).
        for n1 in 1..=14 {
            for n2 in [1, 4, n1, 13] {
                let b: Vec<f64> = (0..n1).map(|i| i as f64).collect();
                let c: Vec<f64> = (0..n2).map(|i| 100.0 + i as f64).collect();
                let (p, shift) = rank_sum(&b, &c);
                let rel = (p - p_min(n1, n2)).abs() / p_min(n1, n2);
                assert!(rel < 1e-9, "{n1} against {n2}: {p} {}", p_min(n1, n2));
                assert_eq!(shift, (n1 * n2) as f64 / 2.0);
            }
        }
        // A shift by a third of the spread over 40 each is clearly
        // significant.
        let (p, _) = rank_sum(&samples(100.0, 10.0, 40, 5), &samples(110.0, 10.0, 40, 6));
        assert!(p < 1e-4 && p_min(40, 40) < 1e-20, "{p}");
    }

    #[test]
    fn holm_adjusts_step_down_and_never_below_an_earlier_one() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        // Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03,
        // 0.06, then 0.04 raised to 0.06.
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
        assert_eq!(holm(&[0.5, 0.9]), [1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn what_can_be_judged_follows_the_family() {
        // Alone at 95 %: 4 a side (2/70) is the fewest.
        assert_eq!(fewest_samples(0.95, 1), Some(4));
        assert!(can_judge(4, 4, 0.95, 1) && !can_judge(3, 3, 0.95, 1));
        // Six metrics: 0.05 / 6 needs 5 a side (2/252); 36 need 7 (2/3432).
        assert_eq!(fewest_samples(0.95, 6), Some(5));
        assert_eq!(fewest_samples(0.95, 36), Some(7));
        assert_eq!(fewest_samples(0.99, 1), Some(5));
        assert_eq!(p_min(0, 3), 1.0);
        // Two metrics fully apart at 4 a side: each alone significant, but
        // not after the correction (2/70 × 2 > 0.05).
        let b = [100.0, 101.0, 102.0, 103.0];
        let c = [200.0, 201.0, 202.0, 203.0];
        let both = compare_family(
            &[
                (&b, &c, Direction::HigherIsBetter),
                (&b, &c, Direction::LowerIsBetter),
            ],
            0.95,
        );
        for x in both.iter().flatten() {
            assert_eq!((x.family, x.verdict), (2, Verdict::TooFewSamples), "{x:?}");
            assert!((x.p_holm - 4.0 / 70.0).abs() < 1e-12, "{x:?}");
        }
        // One that cannot be compared is not in the family.
        let one = compare_family(
            &[
                (&b, &c, Direction::HigherIsBetter),
                (&[0.0, 0.0], &c, Direction::HigherIsBetter),
            ],
            0.95,
        );
        assert!(one[1].is_none());
        let x = one[0].as_ref().unwrap();
        assert_eq!((x.family, x.verdict), (1, Verdict::Better));
    }

    /// Most of the candidate's samples are worse (15 of 20 below every
    /// one of the base's) and a few far better: its mean is better, its
    /// median worse. The rank-sum test and the medians both say worse.
    #[test]
    fn most_samples_worse_with_a_better_mean_is_worse() {
        let base = samples(100.0, 2.0, 20, 7);
        let mut cand = samples(95.0, 2.0, 15, 8);
        cand.extend(samples(1000.0, 10.0, 5, 9));
        let c = compare(&base, &cand, Direction::HigherIsBetter, 0.95).unwrap();
        assert_eq!(c.verdict, Verdict::Worse, "{c:?}");
        assert!(c.ratio < 1.0 && c.candidate_median < c.base_median, "{c:?}");
        assert!(c.rank_shift < 0.0 && c.worse_by_pct(Direction::HigherIsBetter) > 3.0);
        // The other way round it is better, by the same two.
        let c = compare(&cand, &base, Direction::HigherIsBetter, 0.95).unwrap();
        assert_eq!(c.verdict, Verdict::Better, "{c:?}");
    }

    /// A significant test whose medians say the other way is neither
    /// better nor worse.
    #[test]
    fn a_test_and_medians_that_disagree_are_inconsistent() {
        // 19 of the candidate's 40 sit below all of the base, 21 just
        // above the base's median: it ranks low (it beats the base in
        // about a quarter of the pairs), yet its median is the higher one.
        let base: Vec<f64> = (0..40).map(|i| 10.0 + i as f64 / 10.0).collect();
        let cand: Vec<f64> = (0..19)
            .map(|i| 1.0 + i as f64 / 10.0)
            .chain((0..21).map(|i| 11.96 + i as f64 / 10_000.0))
            .collect();
        let c = compare(&base, &cand, Direction::HigherIsBetter, 0.95).unwrap();
        assert!(c.rank_shift < 0.0 && c.ratio > 1.0, "{c:?}");
        assert!(c.p_holm <= 0.05, "{c:?}");
        assert_eq!(c.verdict, Verdict::Inconsistent, "{c:?}");
        assert!(c.verdict.unjudged());
    }

    #[test]
    fn missing_or_unusable_samples_give_none() {
        assert!(compare(&[], &[1.0], Direction::HigherIsBetter, 0.95).is_none());
        assert!(compare(&[f64::NAN], &[1.0], Direction::HigherIsBetter, 0.95).is_none());
        assert!(compare(&[0.0, 0.0], &[1.0, 1.0], Direction::HigherIsBetter, 0.95).is_none());
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), [3.5, 1.0, 3.5, 2.0]);
    }
}
