//! SQL bindings of the sketches: `minhash`, `minhash_oph`, `minhash_jaccard`, `lsh_keys`,
//! `simhash`, `hamming_distance`, `lsh_probability`, `lsh_params`.

use std::cell::RefCell;

use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{Connection, Result};

use crate::core::band_keys;
use crate::core::oph;
use crate::core::shingles::Stopwords;
use crate::core::sketch::{
    lsh_params, lsh_probability, signature_blob, simhash_or_halt, MinHasher, ShingleKind,
    Shingling, Signature,
};
use crate::sqlite::ground::arguments::{
    check_arity, describe, interrupt_poll, number_arg, text_arg, user_error, PURE,
};

/// Default permutations of `minhash`.
pub const DEFAULT_PERMUTATIONS: i64 = 128;
/// Largest `num_perm`.
pub const MAX_PERMUTATIONS: i64 = 4096;

thread_local! {
    /// The permutations last used on this thread.
    static HASHER: RefCell<MinHasher> = RefCell::new(MinHasher::new(DEFAULT_PERMUTATIONS as usize));
}

/// Integer argument `i` in `range`, `default` when absent or NULL.
fn int_arg(
    ctx: &rusqlite::functions::Context<'_>,
    i: usize,
    function: &str,
    problem: &str,
    range: std::ops::RangeInclusive<i64>,
    default: i64,
) -> Result<i64> {
    if ctx.len() <= i {
        return Ok(default);
    }
    match ctx.get_raw(i) {
        ValueRef::Null => Ok(default),
        ValueRef::Integer(v) if range.contains(&v) => Ok(v),
        other => Err(user_error(function, problem, &describe(other))),
    }
}

/// The `num_perm` argument at `i`: 1 to 4096, 128 when absent or NULL.
fn num_perm_arg(ctx: &rusqlite::functions::Context<'_>, i: usize, function: &str) -> Result<usize> {
    let perms = int_arg(
        ctx,
        i,
        function,
        "num_perm must be an integer in [1, 4096]",
        1..=MAX_PERMUTATIONS,
        DEFAULT_PERMUTATIONS,
    )?;
    Ok(perms as usize)
}

/// The shingling from arguments `kind_at` and `kind_at + 1`.
fn shingling_args(
    ctx: &rusqlite::functions::Context<'_>,
    kind_at: usize,
    function: &str,
    default: (&str, i64),
) -> Result<Shingling> {
    let kind = match ctx.len().gt(&kind_at).then(|| ctx.get_raw(kind_at)) {
        None | Some(ValueRef::Null) => default.0.to_string(),
        Some(ValueRef::Text(t)) => String::from_utf8_lossy(t).into_owned(),
        Some(other) => {
            return Err(user_error(
                function,
                "shingle kind must be 'word' or 'char'",
                &describe(other),
            ))
        }
    };
    let n = int_arg(
        ctx,
        kind_at + 1,
        function,
        "shingle size must be an integer in [1, 64]",
        1..=64,
        default.1,
    )?;
    Shingling::new(&kind, n).map_err(|e| user_error(function, e.as_str(), &format!("'{kind}'")))
}

fn signature_arg<'a>(
    ctx: &'a rusqlite::functions::Context<'_>,
    i: usize,
    function: &str,
) -> Result<Option<Signature<'a>>> {
    match ctx.get_raw(i) {
        ValueRef::Null => Ok(None),
        ValueRef::Blob(b) => Signature::parse(b)
            .map(Some)
            .map_err(|e| user_error(function, e.as_str(), &format!("blob of {} bytes", b.len()))),
        other => Err(user_error(
            function,
            "not a minhash signature",
            &describe(other),
        )),
    }
}

fn int_or_null(
    ctx: &rusqlite::functions::Context<'_>,
    i: usize,
    function: &str,
) -> Result<Option<i64>> {
    crate::sqlite::ground::arguments::int_arg(
        ctx,
        i,
        function,
        "arguments must be INTEGER simhashes",
    )
}

/// The arguments `minhash` and `minhash_oph` share (`text`, `num_perm`,
/// `kind`, `n`, `stoplist`), read: the signature's size, the shingling,
/// the text, the stopwords and the interrupt poll.
struct ShingleArgs<'a, S> {
    size: usize,
    shingling: Shingling,
    text: &'a str,
    stopwords: Stopwords,
    stop: S,
}

/// The [`ShingleArgs`] of a call; `None` for a NULL text.
fn shingle_args<'a>(
    ctx: &'a rusqlite::functions::Context<'_>,
    function: &str,
) -> Result<Option<ShingleArgs<'a, impl Fn() -> bool>>> {
    check_arity(ctx, function, 1, 5)?;
    let perms = num_perm_arg(ctx, 1, function)?;
    let shingling = shingling_args(ctx, 2, function, ("char", 5))?;
    let stopwords = match ctx.len().gt(&4).then(|| ctx.get_raw(4)) {
        None | Some(ValueRef::Null) => Stopwords::default(),
        Some(ValueRef::Text(t)) if shingling.kind == ShingleKind::Word => {
            Stopwords::parse(&String::from_utf8_lossy(t))
        }
        Some(other) => {
            return Err(user_error(
                function,
                "stopwords must be one text of words, with word shingles",
                &describe(other),
            ))
        }
    };
    let Some(text) = text_arg(ctx, 0, function, "text")? else {
        return Ok(None);
    };
    let poll = interrupt_poll(ctx)?;
    let stop = move || poll.borrow_mut().interrupted();
    Ok(Some(ShingleArgs {
        size: perms,
        shingling,
        text,
        stopwords,
        stop,
    }))
}

/// Registers the sketch functions on `db`.
pub fn register(db: &Connection) -> Result<()> {
    db.create_scalar_function("minhash", -1, PURE, |ctx| {
        let Some(a) = shingle_args(ctx, "minhash")? else {
            return Ok(ToSqlOutput::Owned(Value::Null));
        };
        let (perms, shingling, stop) = (a.size, a.shingling, a.stop);
        let hashes = shingling.hashes_without(a.text, &a.stopwords, &stop)?;
        let sig = HASHER.with(|h| {
            let mut h = h.borrow_mut();
            if h.num_perm() != perms {
                *h = MinHasher::new(perms);
            }
            h.signature_or_halt(&hashes, &stop)
        })?;
        Ok(ToSqlOutput::Owned(match sig {
            Some(sig) => Value::Blob(MinHasher::to_blob(shingling, &sig)),
            None => Value::Null,
        }))
    })?;

    db.create_scalar_function("minhash_oph", -1, PURE, |ctx| {
        let Some(a) = shingle_args(ctx, "minhash_oph")? else {
            return Ok(ToSqlOutput::Owned(Value::Null));
        };
        // (The hashes go into the bins as they are made.)
        let mut bins = oph::Bins::new(a.size);
        a.shingling
            .each_hash(a.text, &a.stopwords, &a.stop, &mut |h| bins.add(h))?;
        Ok(ToSqlOutput::Owned(match bins.signature() {
            Some(sig) => Value::Blob(signature_blob(oph::FORMAT, a.shingling, &sig)),
            None => Value::Null,
        }))
    })?;

    db.create_scalar_function("minhash_jaccard", 2, PURE, |ctx| {
        const F: &str = "minhash_jaccard";
        let a = signature_arg(ctx, 0, F)?;
        let b = signature_arg(ctx, 1, F)?;
        let (Some(a), Some(b)) = (a, b) else {
            return Ok(None);
        };
        a.jaccard(&b).map(Some).map_err(|e| {
            user_error(
                F,
                "signatures must have the same shingles and size",
                e.as_str(),
            )
        })
    })?;

    db.create_scalar_function("lsh_keys", -1, PURE, |ctx| {
        const F: &str = "lsh_keys";
        check_arity(ctx, F, 2, 3)?;
        let positive = |i: usize, name: &str| -> Result<Option<usize>> {
            if ctx.len() <= i {
                return Ok(None);
            }
            match ctx.get_raw(i) {
                ValueRef::Null => Ok(None),
                ValueRef::Integer(v) if v > 0 => Ok(Some(v as usize)),
                other => Err(user_error(
                    F,
                    &format!("{name} must be a positive integer"),
                    &describe(other),
                )),
            }
        };
        let Some(bands) = positive(1, "bands")? else {
            return Err(user_error(F, "bands is required", "NULL"));
        };
        let rows = positive(2, "rows")?;
        let Some(signature) = signature_arg(ctx, 0, F)? else {
            return Ok(None);
        };
        let keys = band_keys::band_keys(&signature, bands, rows).map_err(|e| {
            let rows = rows.map_or("num_perm / bands".to_string(), |r| r.to_string());
            user_error(F, e.as_str(), &format!("{bands} * {rows}"))
        })?;
        Ok(Some(band_keys::pack(&keys)))
    })?;

    db.create_scalar_function("simhash", -1, PURE, |ctx| {
        const F: &str = "simhash";
        check_arity(ctx, F, 1, 3)?;
        let shingling = shingling_args(ctx, 1, F, ("word", 1))?;
        let Some(text) = text_arg(ctx, 0, F, "text")? else {
            return Ok(None);
        };
        let poll = interrupt_poll(ctx)?;
        let stop = || poll.borrow_mut().interrupted();
        let hashes = shingling.hashes_or_halt(text, &stop)?;
        Ok(simhash_or_halt(&hashes, &stop)?.map(|h| h as i64))
    })?;

    db.create_scalar_function("hamming_distance", 2, PURE, |ctx| {
        const F: &str = "hamming_distance";
        let (Some(a), Some(b)) = (int_or_null(ctx, 0, F)?, int_or_null(ctx, 1, F)?) else {
            return Ok(None);
        };
        Ok(Some(i64::from((a ^ b).count_ones())))
    })?;

    db.create_scalar_function("lsh_probability", 3, PURE, |ctx| {
        const F: &str = "lsh_probability";
        let Some(s) = number_arg(ctx, 0, F, "similarity")? else {
            return Ok(None);
        };
        if !(0.0..=1.0).contains(&s) {
            return Err(user_error(
                F,
                "similarity must be in [0.0, 1.0]",
                &describe(ctx.get_raw(0)),
            ));
        }
        let bands = int_arg(
            ctx,
            1,
            F,
            "bands must be a positive integer",
            1..=i64::from(u16::MAX),
            0,
        )?;
        let rows = int_arg(
            ctx,
            2,
            F,
            "rows must be a positive integer",
            1..=i64::from(u16::MAX),
            0,
        )?;
        Ok(Some(lsh_probability(s, bands as usize, rows as usize)))
    })?;

    db.create_scalar_function("lsh_params", -1, PURE, |ctx| {
        const F: &str = "lsh_params";
        check_arity(ctx, F, 1, 2)?;
        let perms = num_perm_arg(ctx, 1, F)?;
        let Some(t) = number_arg(ctx, 0, F, "threshold")? else {
            return Ok(None);
        };
        if !(0.0..=1.0).contains(&t) {
            return Err(user_error(
                F,
                "threshold must be in [0.0, 1.0]",
                &describe(ctx.get_raw(0)),
            ));
        }
        let (bands, rows) = lsh_params(t, perms);
        Ok(Some(format!("{{\"bands\":{bands},\"rows\":{rows}}}")))
    })?;
    Ok(())
}
