//! The LSH band keys of a signature as one value: `bands` keys of `rows`
//! values each ([`layout`] checks the shape), packed as 8 little-endian
//! bytes a key in band order ([`pack`], [`unpack`]). `lsh_keys` returns
//! them and `near_dups_among` reads them (band `i` is the `i`-th key), so
//! a whole corpus's candidates need one row a text, not one row a band.
//!
//! Cost: one combine of `rows` values a band; 8 bytes a band.
//!
//! Reference: the banding of Leskovec, Rajaraman and Ullman, *Mining of
//! Massive Datasets*, 3.4.1; the keys are those of `lsh_bands`.

use crate::core::invalid::Invalid;
use crate::core::sketch::Signature;

/// The rows a band of a `values`-long signature cut in `bands` bands:
/// `rows` when given, else `values / bands`; `bands * rows` may not exceed
/// `values`.
///
/// ```
/// use dedup::core::band_keys::layout;
/// assert_eq!(layout(128, 32, None), Ok(4));
/// assert_eq!(layout(128, 42, Some(3)), Ok(3));
/// assert!(layout(128, 32, Some(5)).is_err());
/// ```
pub fn layout(values: usize, bands: usize, rows: Option<usize>) -> Result<usize, Invalid> {
    let rows = rows.unwrap_or(values / bands.max(1));
    if bands == 0 || rows == 0 || bands.saturating_mul(rows) > values {
        return Err(format!("bands * rows must be at most the signature's {values} values").into());
    }
    Ok(rows)
}

/// The keys of `signature`'s first `bands` bands of `rows` values
/// ([`layout`] checked first).
pub fn band_keys(
    signature: &Signature<'_>,
    bands: usize,
    rows: Option<usize>,
) -> Result<Vec<i64>, Invalid> {
    let rows = layout(signature.len(), bands, rows)?;
    Ok((0..bands).map(|b| signature.band_key(b, rows)).collect())
}

/// `keys` as 8 little-endian bytes each, in order.
pub fn pack(keys: &[i64]) -> Vec<u8> {
    keys.iter().flat_map(|k| k.to_le_bytes()).collect()
}

/// The keys of a [`pack`]ed blob, in band order; an error when its length
/// is not a multiple of 8.
///
/// ```
/// use dedup::core::band_keys::{pack, unpack};
/// let blob = pack(&[7, -1]);
/// assert_eq!(unpack(&blob).unwrap().collect::<Vec<_>>(), [7, -1]);
/// assert!(unpack(&blob[1..]).is_err());
/// ```
pub fn unpack(blob: &[u8]) -> Result<impl Iterator<Item = i64> + '_, Invalid> {
    if !blob.len().is_multiple_of(8) {
        return Err("not the band keys of lsh_keys (8 bytes a band)".into());
    }
    Ok(blob
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::sketch::{MinHasher, Shingling};
    use proptest::prelude::*;

    fn blob(text: &str) -> Vec<u8> {
        let shingling = Shingling::new("char", 5).unwrap();
        let sig = MinHasher::new(128)
            .signature(&shingling.hashes(text))
            .unwrap();
        MinHasher::to_blob(shingling, &sig)
    }

    #[test]
    fn keys_are_the_bands_of_the_signature() {
        let b = blob("the quick brown fox jumps over the lazy dog");
        let sig = Signature::parse(&b).unwrap();
        let keys = band_keys(&sig, 32, None).unwrap();
        assert_eq!(keys.len(), 32);
        for (band, key) in keys.iter().enumerate() {
            assert_eq!(*key, sig.band_key(band, 4));
        }
        // Equal bands give equal keys; a band of other values another key.
        let other = blob("the quick brown fox jumps over the lazy cat");
        let other = band_keys(&Signature::parse(&other).unwrap(), 32, None).unwrap();
        let same = keys.iter().zip(&other).filter(|(a, b)| a == b).count();
        assert!(same > 0 && same < 32, "{same} of 32 bands equal");
    }

    #[test]
    fn a_layout_past_the_signature_is_refused() {
        let b = blob("some text long enough");
        let sig = Signature::parse(&b).unwrap();
        assert!(band_keys(&sig, 129, Some(1)).is_err());
        assert!(band_keys(&sig, 0, None).is_err());
        assert_eq!(band_keys(&sig, 3, Some(40)).unwrap().len(), 3);
    }

    proptest! {
        #[test]
        fn unpack_inverts_pack(keys in proptest::collection::vec(any::<i64>(), 0..64)) {
            prop_assert_eq!(unpack(&pack(&keys)).unwrap().collect::<Vec<_>>(), keys);
        }
    }
}
