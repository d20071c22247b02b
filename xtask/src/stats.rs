//! Statistics over a suite's repeats: means, sample standard deviations
//! and ratios paired by repeat.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Mean and sample standard deviation of the finite values of `xs`; NaN
/// for both without any.
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let xs: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// [`mean_sd`] of `xs`, or `None` when there are none.
pub fn mean_sd_of(xs: &[f64]) -> Option<(f64, f64)> {
    (!xs.is_empty()).then(|| mean_sd(xs))
}

/// The mean of the figures that are there, if it is finite.
pub fn mean_of_some(xs: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let xs: Vec<f64> = xs.into_iter().flatten().collect();
    Some(mean_sd(&xs).0).filter(|x| x.is_finite())
}

/// Each `(repeat, value)` divided by the reference's value in the same
/// repeat; values whose repeat the reference lacks are left out.
pub fn paired_ratios(
    values: impl IntoIterator<Item = (u32, f64)>,
    reference: &BTreeMap<u32, f64>,
) -> Vec<f64> {
    values
        .into_iter()
        .filter_map(|(r, v)| Some(v / reference.get(&r)?))
        .collect()
}

/// Mean and sample standard deviation of ratios, and how many.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Ratio {
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub mean: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub sd: f64,
    pub n: usize,
}

impl Ratio {
    /// The statistics of `ratios`; None if there are none.
    pub fn of(ratios: &[f64]) -> Option<Ratio> {
        mean_sd_of(ratios).map(|(mean, sd)| Ratio {
            mean,
            sd,
            n: ratios.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_sd_matches_hand_computation() {
        let (m, sd) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert!((m - 5.0).abs() < 1e-12);
        assert!((sd - 2.138089935).abs() < 1e-6);
        assert_eq!(mean_sd(&[3.0, f64::NAN]), (3.0, 0.0));
        assert!(mean_sd(&[]).0.is_nan());
        assert_eq!(mean_sd_of(&[]), None);
    }

    #[test]
    fn ratios_pair_by_repeat() {
        let reference: BTreeMap<u32, f64> = [(0, 10.0), (1, 20.0)].into();
        let r = paired_ratios([(0, 5.0), (1, 30.0), (2, 1.0)], &reference);
        assert_eq!(r, [0.5, 1.5]);
        let s = Ratio::of(&r).unwrap();
        assert_eq!((s.mean, s.n), (1.0, 2));
        assert!(Ratio::of(&[]).is_none());
        assert_eq!(mean_of_some([Some(2.0), None, Some(4.0)]), Some(3.0));
        assert_eq!(mean_of_some([None]), None);
    }
}
