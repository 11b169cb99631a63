//! One-permutation MinHash with optimal densification: a MinHash signature
//! from one hash of each shingle instead of one a permutation.
//!
//! Each shingle hash is mixed once; its high bits pick one of `k` bins and
//! its low 32 bits are the value, and a bin keeps its smallest value. A bin
//! no shingle fell into takes the value of a filled bin chosen by a fixed
//! sequence of hashes of its index (optimal densification), so two texts
//! with the same shingles have the same signature, and the chance that bin
//! `i` of two signatures is equal is their Jaccard similarity, as under
//! `k` permutations. The signature is the same shape as classic MinHash's and
//! its BLOB is read by the same functions (`lsh_bands`, `minhash_jaccard`),
//! with its own format byte, so the two kinds never compare.
//!
//! Cost: O(shingles + k) and one hash a shingle (classic MinHash is
//! O(shingles × k)); the densification's expected work is `k × k / filled`
//! hashes, small unless a text has far fewer shingles than bins. Its
//! estimates vary a little more than classic MinHash's for texts with fewer
//! shingles than `k`.
//!
//! Reference: P. Li, A. Owen, C.-H. Zhang, "One Permutation Hashing"
//! (NIPS 2012); A. Shrivastava, "Optimal Densification for Fast and Accurate
//! Minwise Hashing" (ICML 2017); rensa's `OptDensMinHash`.

use crate::core::halt::Halt;

/// Format byte of a one-permutation signature BLOB (a classic one's is 1).
pub const FORMAT: u8 = 2;

/// SplitMix64's finalizer: a bijective mix of all 64 bits.
#[inline(always)]
fn mix(x: u64) -> u64 {
    let mut z = x ^ 0x6a09_e667_f3bc_c909;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The bin an empty bin `bin` tries at `attempt` (0, 1, ...), of `k`.
#[inline]
fn probe(bin: usize, attempt: u64, k: usize) -> usize {
    let h = mix(((bin as u64) << 32) ^ attempt ^ 0x0d0e_d0f0_0000_0000);
    (((h >> 32) * k as u64) >> 32) as usize
}

/// The one-permutation signature of `k` values (1 to 4096) of the shingle
/// `hashes`; `None` when there are none. Asks `stop` every million hashes.
pub fn signature_or_halt(
    hashes: &[u64],
    k: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Option<Vec<u32>>, Halt> {
    let mut bins = Bins::new(k);
    for (n, part) in hashes.chunks(1 << 20).enumerate() {
        if n > 0 && stop() {
            return Err(Halt::Stopped);
        }
        part.iter().for_each(|&h| bins.add(h));
    }
    Ok(bins.signature())
}

/// A signature being made: the `k` bins, each the smallest value of the
/// shingle hashes added that fell into it.
///
/// ```
/// use dedup::core::oph::{signature, Bins};
/// let hashes = [3, 1, 4, 1, 5, 9, 2, 6];
/// let mut bins = Bins::new(16);
/// hashes.iter().for_each(|&h| bins.add(h));
/// assert_eq!(bins.signature(), signature(&hashes, 16));
/// assert_eq!(Bins::new(16).signature(), None);
/// ```
pub struct Bins {
    /// (u64 so that "empty" is above every value: u32::MAX is a value.)
    bins: Vec<u64>,
}

impl Bins {
    /// `k` empty bins (`k` from 1).
    pub fn new(k: usize) -> Self {
        Bins {
            bins: vec![u64::MAX; k],
        }
    }

    /// One shingle hash in.
    #[inline]
    pub fn add(&mut self, h: u64) {
        let x = mix(h);
        let bin = (((x >> 32) * self.bins.len() as u64) >> 32) as usize;
        let value = x & 0xffff_ffff;
        // (bin < k: the product of a 32-bit number and k, shifted by 32.)
        let slot = &mut self.bins[bin];
        *slot = (*slot).min(value);
    }

    /// The signature, the empty bins densified; `None` when no hash was
    /// added (or `k` is 0).
    pub fn signature(self) -> Option<Vec<u32>> {
        let k = self.bins.len();
        if self.bins.iter().all(|&v| v == u64::MAX) {
            return None;
        }
        let mut sig = vec![0u32; k];
        for (i, v) in sig.iter_mut().enumerate() {
            let mut value = self.bins[i];
            let mut attempt = 0u64;
            // Terminates: at least one bin is filled, and the probes reach
            // every bin with probability one.
            while value == u64::MAX {
                value = self.bins[probe(i, attempt, k)];
                attempt += 1;
            }
            *v = value as u32;
        }
        Some(sig)
    }
}

/// [`signature_or_halt`] that never stops.
pub fn signature(hashes: &[u64], k: usize) -> Option<Vec<u32>> {
    signature_or_halt(hashes, k, &|| false).expect("never stops")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn random(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(*state)
    }

    /// Mean estimate over `trials` pairs of sets with `shared` common and
    /// `own` distinct shingles each.
    fn mean_estimate(k: usize, shared: usize, own: usize, trials: usize) -> f64 {
        let mut state = 11u64;
        let mut total = 0.0;
        for _ in 0..trials {
            let common: Vec<u64> = (0..shared).map(|_| random(&mut state)).collect();
            let mut a = common.clone();
            let mut b = common;
            a.extend((0..own).map(|_| random(&mut state)));
            b.extend((0..own).map(|_| random(&mut state)));
            let (sa, sb) = (signature(&a, k).unwrap(), signature(&b, k).unwrap());
            total += sa.iter().zip(&sb).filter(|(x, y)| x == y).count() as f64 / k as f64;
        }
        total / trials as f64
    }

    #[test]
    fn estimates_track_the_true_jaccard() {
        // 1,000 shingles a set, 600 shared: J = 600 / 1400; standard error
        // of the mean about sqrt(J(1-J)/256/40) = 0.005.
        let truth = 600.0 / 1400.0;
        let mean = mean_estimate(256, 600, 400, 40);
        assert!((mean - truth).abs() < 0.02, "mean {mean}, true {truth}");
    }

    #[test]
    fn densified_estimates_track_the_true_jaccard() {
        // 40 shingles a set in 128 bins: most bins are filled by
        // densification. J = 30 / 50.
        let truth = 30.0 / 50.0;
        let mean = mean_estimate(128, 30, 10, 200);
        assert!((mean - truth).abs() < 0.03, "mean {mean}, true {truth}");
    }

    #[test]
    fn one_shingle_fills_every_bin_with_its_value() {
        let sig = signature(&[42], 64).unwrap();
        assert!(sig.iter().all(|&v| v == sig[0]));
        assert_eq!(signature(&[], 64), None);
    }

    #[test]
    fn a_stop_is_asked_between_chunks() {
        let hashes = vec![7u64; (1 << 20) + 1];
        assert_eq!(signature_or_halt(&hashes, 8, &|| true), Err(Halt::Stopped));
        assert!(signature_or_halt(&hashes[..1 << 20], 8, &|| true).is_ok());
    }

    proptest! {
        /// The signature depends on the set of shingles only: order and
        /// repeats do not change it.
        #[test]
        fn order_and_repeats_do_not_matter(
            mut hashes in proptest::collection::vec(any::<u64>(), 1..300),
            k in 1usize..300,
        ) {
            let sig = signature(&hashes, k).unwrap();
            hashes.reverse();
            let again = hashes.clone();
            hashes.extend(again);
            prop_assert_eq!(signature(&hashes, k).unwrap(), sig);
        }

        /// Each value is the smallest value of the shingles in its bin or,
        /// for an empty bin, a filled bin's.
        #[test]
        fn values_are_bin_minima(
            hashes in proptest::collection::vec(any::<u64>(), 1..200),
            k in 1usize..200,
        ) {
            let sig = signature(&hashes, k).unwrap();
            let mut minima = vec![None::<u32>; k];
            for &h in &hashes {
                let x = mix(h);
                let bin = (((x >> 32) * k as u64) >> 32) as usize;
                let v = x as u32;
                minima[bin] = Some(minima[bin].map_or(v, |m| m.min(v)));
            }
            for (i, m) in minima.iter().enumerate() {
                match m {
                    Some(m) => prop_assert_eq!(sig[i], *m),
                    None => prop_assert!(minima.contains(&Some(sig[i]))),
                }
            }
        }
    }
}
