//! Thin SQL bindings of the scalar functions: argument checking, NULL
//! handling and error messages; the work is done by the pure modules.

use std::cell::RefCell;
use std::sync::Arc;

use rusqlite::functions::Context;
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{Connection, Result};

use crate::core::hash;
use crate::core::shingles::{self, Shingles, Stopwords};
use crate::core::similarity;
use crate::core::text;
use crate::core::url::{self, UrlOptions};
use crate::sqlite::ground::arguments::{
    check_arity, describe, escape, interrupt_poll, number_arg, text_arg, user_error, PURE,
};

/// Largest `len(a) * len(b)` lev_ratio computes (about a second of work);
/// beyond it the call fails instead of running for hours.
pub const MAX_LEV_CELLS: u128 = 100_000_000_000;

thread_local! {
    /// The defaults, and the last options texts parsed on this thread (the
    /// latest first): the pipeline passes options computed per row (SQLite keeps auxiliary
    /// data only for constant arguments), nearly always the same text, and
    /// parsing them for each of the three URL functions of each row was a
    /// third of phase 1's time (allocating the default parameter lists).
    static DEFAULT_OPTIONS: Arc<UrlOptions> = Arc::new(UrlOptions::default());
    static LAST_OPTIONS: RefCell<Vec<(Vec<u8>, Arc<UrlOptions>)>> = const { RefCell::new(Vec::new()) };
}

/// How many options texts [`LAST_OPTIONS`] keeps: phase 1 passes two a row
/// (the canonical and the strict URL's), which one entry would parse
/// again on every call.
const OPTIONS_KEPT: usize = 4;

/// The URL options of argument `i`, parsed once per statement (SQLite
/// auxiliary data) or per distinct recent text ([`LAST_OPTIONS`]); the defaults
/// when the argument is absent.
fn url_options(ctx: &Context<'_>, i: usize, function: &'static str) -> Result<Arc<UrlOptions>> {
    if ctx.len() <= i {
        return Ok(DEFAULT_OPTIONS.with(Arc::clone));
    }
    let ValueRef::Text(spec) = ctx.get_raw(i) else {
        return parse_url_options(ctx, i, function);
    };
    let cached = LAST_OPTIONS.with(|cell| {
        cell.borrow()
            .iter()
            .find(|(text, _)| text.as_slice() == spec)
            .map(|(_, opts)| opts.clone())
    });
    if let Some(opts) = cached {
        return Ok(opts);
    }
    let opts = parse_url_options(ctx, i, function)?;
    LAST_OPTIONS.with(|cell| {
        let mut kept = cell.borrow_mut();
        kept.insert(0, (spec.to_vec(), opts.clone()));
        kept.truncate(OPTIONS_KEPT);
    });
    Ok(opts)
}

/// Argument `i` parsed as URL options (kept as SQLite auxiliary data).
fn parse_url_options(
    ctx: &Context<'_>,
    i: usize,
    function: &'static str,
) -> Result<Arc<UrlOptions>> {
    ctx.get_or_create_aux(i as i32, |v| -> std::result::Result<UrlOptions, String> {
        match v {
            ValueRef::Null => Ok(UrlOptions::default()),
            ValueRef::Text(t) => {
                let spec = std::str::from_utf8(t).map_err(|_| {
                    format!(
                        "{function}[argument]: options are not valid UTF-8, got text of {} bytes",
                        t.len()
                    )
                })?;
                UrlOptions::parse(spec).map_err(|e| {
                    format!(
                        "{function}[argument]: {}, got '{}'",
                        escape(e.as_str(), 200),
                        escape(spec, 100)
                    )
                })
            }
            other => Err(format!(
                "{function}[argument]: options must be TEXT, got {}",
                describe(other)
            )),
        }
    })
}

thread_local! {
    /// The last URL canonicalized on this thread, with its options and
    /// result: `canonical_url`, `url_domain` and `url_discard_reason` of one
    /// row parse the URL once (and its strict URL too, when options alike
    /// for it make the same: [`url::UrlOptions::alike_for`]).
    static LAST_URL: RefCell<Option<(String, Arc<UrlOptions>, UrlResult)>> = const { RefCell::new(None) };
}

type UrlResult = std::result::Result<url::CanonicalUrl, url::Discard>;

/// [`url::canonicalize`] through the one-entry cache [`LAST_URL`].
fn canonicalize_cached<T>(
    u: &str,
    opts: &Arc<UrlOptions>,
    pick: impl FnOnce(&UrlResult) -> T,
) -> T {
    LAST_URL.with(|cell| {
        let mut last = cell.borrow_mut();
        match &*last {
            Some((url, o, result))
                if url == u
                    && (Arc::ptr_eq(o, opts)
                        || **o == **opts
                        || (!u.contains('?') && options_alike(o, opts))) =>
            {
                pick(result)
            }
            _ => {
                let result = url::canonicalize(u, opts);
                let out = pick(&result);
                *last = Some((u.to_owned(), opts.clone(), result));
                out
            }
        }
    })
}

/// Two options and whether they are alike for URLs without `?`.
type AlikePair = (Arc<UrlOptions>, Arc<UrlOptions>, bool);

thread_local! {
    /// The last pair of options [`options_alike`] compared, and the answer
    /// (the `Arc`s held, so that their addresses stay theirs).
    static LAST_ALIKE: RefCell<Option<AlikePair>> = const { RefCell::new(None) };
}

/// `a.alike_for(b, url)` for a `url` without `?`, remembered for the last
/// pair: phase 1 asks it of the same two options on every row, and the
/// answer compares their lists of patterns and parameters.
fn options_alike(a: &Arc<UrlOptions>, b: &Arc<UrlOptions>) -> bool {
    LAST_ALIKE.with(|cell| {
        let mut last = cell.borrow_mut();
        match &*last {
            Some((x, y, alike)) if Arc::ptr_eq(x, a) && Arc::ptr_eq(y, b) => *alike,
            _ => {
                let alike = a.alike_for(b, "");
                *last = Some((a.clone(), b.clone(), alike));
                alike
            }
        }
    })
}

fn text_result(s: Option<String>) -> ToSqlOutput<'static> {
    ToSqlOutput::Owned(s.map_or(Value::Null, Value::Text))
}

/// Registers the scalar functions on `db`.
pub fn register_scalars(db: &Connection) -> Result<()> {
    db.create_scalar_function("normalize_text", -1, PURE, |ctx| {
        check_arity(ctx, "normalize_text", 1, 1)?;
        let t = text_arg(ctx, 0, "normalize_text", "text")?;
        let poll = interrupt_poll(ctx)?;
        let stop = || poll.borrow_mut().interrupted();
        Ok(text_result(
            t.map(|t| text::normalize_or_halt(t, &stop)).transpose()?,
        ))
    })?;

    type HtmlReader =
        fn(&str, &dyn Fn() -> bool) -> std::result::Result<String, crate::core::halt::Halt>;
    let readers: [(&str, HtmlReader); 2] = [
        ("html_text", crate::core::html::html_text_or_halt),
        ("main_text", crate::core::html::main_text_or_halt),
    ];
    for (name, read) in readers {
        db.create_scalar_function(name, -1, PURE, move |ctx| {
            check_arity(ctx, name, 1, 1)?;
            let t = text_arg(ctx, 0, name, "html")?;
            let poll = interrupt_poll(ctx)?;
            let stop = || poll.borrow_mut().interrupted();
            Ok(text_result(t.map(|t| read(t, &stop)).transpose()?))
        })?;
    }

    db.create_scalar_function("is_html", -1, PURE, |ctx| {
        check_arity(ctx, "is_html", 1, 1)?;
        let t = text_arg(ctx, 0, "is_html", "text")?;
        Ok(t.map(|t| crate::core::html::looks_like_html(t) as i64))
    })?;

    db.create_scalar_function("content_hash", -1, PURE, |ctx| {
        check_arity(ctx, "content_hash", 1, 1)?;
        let t = text_arg(ctx, 0, "content_hash", "text")?;
        let poll = interrupt_poll(ctx)?;
        let stop = || poll.borrow_mut().interrupted();
        Ok(text_result(
            t.map(|t| hash::content_hash_or_halt(t, &stop))
                .transpose()?
                .flatten(),
        ))
    })?;

    db.create_scalar_function("canonical_url", -1, PURE, |ctx| {
        check_arity(ctx, "canonical_url", 1, 2)?;
        let opts = url_options(ctx, 1, "canonical_url")?;
        let u = text_arg(ctx, 0, "canonical_url", "url")?;
        Ok(text_result(u.and_then(|u| {
            canonicalize_cached(u, &opts, |r| r.as_ref().ok().map(|c| c.url.clone()))
        })))
    })?;

    db.create_scalar_function("url_domain", -1, PURE, |ctx| {
        check_arity(ctx, "url_domain", 1, 2)?;
        let opts = url_options(ctx, 1, "url_domain")?;
        let u = text_arg(ctx, 0, "url_domain", "url")?;
        Ok(text_result(u.and_then(|u| {
            canonicalize_cached(u, &opts, |r| r.as_ref().ok().map(|c| c.domain.clone()))
        })))
    })?;

    db.create_scalar_function("url_wayback", -1, PURE, |ctx| {
        check_arity(ctx, "url_wayback", 1, 1)?;
        let u = text_arg(ctx, 0, "url_wayback", "url")?;
        Ok(text_result(u.and_then(|u| {
            url::unwrap_wayback(u.trim().trim_end_matches('/'))
                .map(|(_, wrapper)| wrapper.to_string())
        })))
    })?;

    db.create_scalar_function("url_host", 1, PURE, |ctx| {
        let u = text_arg(ctx, 0, "url_host", "url")?;
        Ok(text_result(u.and_then(crate::core::url_host::host_key)))
    })?;

    db.create_scalar_function("url_discard_reason", -1, PURE, |ctx| {
        check_arity(ctx, "url_discard_reason", 1, 2)?;
        let opts = url_options(ctx, 1, "url_discard_reason")?;
        let u = text_arg(ctx, 0, "url_discard_reason", "url")?;
        Ok(text_result(u.and_then(|u| {
            canonicalize_cached(u, &opts, |r| r.as_ref().err().map(|d| d.to_string()))
        })))
    })?;

    db.create_scalar_function("lev_ratio", -1, PURE, |ctx| {
        check_arity(ctx, "lev_ratio", 2, 3)?;
        let a = text_arg(ctx, 0, "lev_ratio", "a")?;
        let b = text_arg(ctx, 1, "lev_ratio", "b")?;
        let cutoff = if ctx.len() > 2 {
            number_arg(ctx, 2, "lev_ratio", "score_cutoff")?
        } else {
            None
        };
        if let Some(c) = cutoff {
            if !(0.0..=1.0).contains(&c) {
                return Err(user_error(
                    "lev_ratio",
                    "score_cutoff must be in [0.0, 1.0]",
                    &describe(ctx.get_raw(2)),
                ));
            }
        }
        let (Some(a), Some(b)) = (a, b) else {
            return Ok(None);
        };
        let (a, b) = (
            similarity::CodePoints::try_new(a)?,
            similarity::CodePoints::try_new(b)?,
        );
        let (la, lb) = (a.len(), b.len());
        let cutoff = cutoff.unwrap_or(0.0);
        // The length bound decides without the limit below.
        if 1.0 - (la.abs_diff(lb) as f64) / ((la + lb).max(1) as f64) < cutoff {
            return Ok(Some(0.0));
        }
        if (la as u128) * (lb as u128) > MAX_LEV_CELLS {
            return Err(user_error(
                "lev_ratio",
                &format!("inputs too long: len(a) * len(b) must be at most {MAX_LEV_CELLS}"),
                &format!("{la} * {lb}"),
            ));
        }
        let poll = interrupt_poll(ctx)?;
        let stop = || poll.borrow_mut().interrupted();
        Ok(Some(similarity::lev_ratio_points_or_halt(
            &a, &b, cutoff, &stop,
        )?))
    })?;

    db.create_scalar_function("shingle_resemblance", -1, PURE, |ctx| {
        const F: &str = "shingle_resemblance";
        check_arity(ctx, F, 2, 4)?;
        let a = text_arg(ctx, 0, F, "a")?;
        let b = text_arg(ctx, 1, F, "b")?;
        let n = if ctx.len() > 2 {
            match ctx.get_raw(2) {
                ValueRef::Null => 5,
                ValueRef::Integer(n) if (1..=64).contains(&n) => n as usize,
                other => {
                    return Err(user_error(
                        F,
                        "n must be an integer in [1, 64]",
                        &describe(other),
                    ))
                }
            }
        } else {
            5
        };
        let stopwords = if ctx.len() > 3 {
            ctx.get_or_create_aux(3, |v| -> std::result::Result<Stopwords, String> {
                match v {
                    ValueRef::Null => Ok(Stopwords::default()),
                    ValueRef::Text(t) => {
                        std::str::from_utf8(t).map(Stopwords::parse).map_err(|_| {
                            format!(
                                "{F}[argument]: stopwords are not valid UTF-8, got text of {} bytes",
                                t.len()
                            )
                        })
                    }
                    other => Err(format!(
                        "{F}[argument]: stopwords must be TEXT, got {}",
                        describe(other)
                    )),
                }
            })?
        } else {
            Arc::new(Stopwords::default())
        };
        let (Some(a), Some(b)) = (a, b) else {
            return Ok(None);
        };
        let sa = Shingles::new(a, n, &stopwords);
        let sb = Shingles::new(b, n, &stopwords);
        Ok(Some(shingles::resemblance(&sa, &sb)))
    })?;
    Ok(())
}
