//! A function's arguments checked and its errors worded, for every room of
//! the bindings: the flags a registration takes ([`PURE`], [`WRITES`]),
//! the error `<function>[argument]: <problem>, got <value>` of a scalar function
//! ([`user_error`]) and of a table-valued one ([`module_error`]), with the
//! value described ([`describe`]), the argument count ([`check_arity`]),
//! each argument as text or a number, and the interrupt poller of the
//! connection running the function.

use std::cell::RefCell;

use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::types::ValueRef;
use rusqlite::{Error, Result};

use crate::sqlite::ground::error::Code;
use crate::sqlite::ground::interrupt::InterruptPoll;

/// Flags of a pure function: same result for the same arguments, no side
/// effects, safe in views, triggers and schema objects.
pub const PURE: FunctionFlags = FunctionFlags::SQLITE_UTF8
    .union(FunctionFlags::SQLITE_DETERMINISTIC)
    .union(FunctionFlags::SQLITE_INNOCUOUS);

/// Flags of the pipeline's functions that write: never in views, triggers
/// or schema objects, and never twice per statement as constants.
pub const WRITES: FunctionFlags =
    FunctionFlags::SQLITE_UTF8.union(FunctionFlags::SQLITE_DIRECTONLY);

/// The SQL error `<function>[argument]: <problem>, got <value>`. The message never
/// holds a NUL (SQLite would drop it) or more than a few hundred characters.
pub fn user_error(function: &str, problem: &str, got: &str) -> Error {
    coded_error(function, Code::Argument, problem, got)
}

/// The SQL error `<function>[<code>]: <problem>, got <value>`, as
/// [`user_error`] for another code (a call's settings: [`Code::Setting`]).
pub fn coded_error(function: &str, code: Code, problem: &str, got: &str) -> Error {
    Error::UserFunctionError(
        format!(
            "{function}[{}]: {}, got {}",
            code.as_str(),
            escape(problem, 300),
            escape(got, 300)
        )
        .into(),
    )
}

pub use crate::core::text::excerpt as escape;

/// A table-valued function's error: `name[argument]: problem, got got` (SQLite
/// reports a virtual table's errors as a module's).
pub fn module_error(name: &str, problem: &str, got: &str) -> Error {
    coded_module_error(name, Code::Argument, problem, got)
}

/// A table-valued function's error of another code than [`Code::Argument`].
pub fn coded_module_error(name: &str, code: Code, problem: &str, got: &str) -> Error {
    Error::ModuleError(format!(
        "{name}[{}]: {}, got {}",
        code.as_str(),
        escape(problem, 300),
        escape(got, 300)
    ))
}

/// Describes a value for an error message: its type and a short excerpt.
pub fn describe(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Null => "NULL".to_string(),
        ValueRef::Integer(i) => format!("integer {i}"),
        ValueRef::Real(r) => format!("real {r}"),
        ValueRef::Text(t) => {
            let s = String::from_utf8_lossy(t);
            if s.chars().nth(40).is_some() {
                format!("text '{}' ({} bytes)", escape(&s, 40), t.len())
            } else {
                format!("text '{}'", escape(&s, 40))
            }
        }
        ValueRef::Blob(b) => format!("blob of {} bytes", b.len()),
    }
}

/// Checks the argument count of a variadic registration.
pub fn check_arity(ctx: &Context<'_>, function: &str, min: usize, max: usize) -> Result<()> {
    let n = ctx.len();
    if n < min || n > max {
        let expected = if min == max {
            format!("{min} argument{}", if min == 1 { "" } else { "s" })
        } else {
            format!("{min} to {max} arguments")
        };
        return Err(user_error(
            function,
            &format!("expected {expected}"),
            &format!("{n}"),
        ));
    }
    Ok(())
}

/// Argument `i` as text; `None` for NULL; an error for other types or
/// invalid UTF-8.
pub fn text_arg<'a>(
    ctx: &'a Context<'_>,
    i: usize,
    function: &str,
    name: &str,
) -> Result<Option<&'a str>> {
    match ctx.get_raw(i) {
        ValueRef::Null => Ok(None),
        ValueRef::Text(bytes) => std::str::from_utf8(bytes).map(Some).map_err(|e| {
            user_error(
                function,
                &format!("{name} is not valid UTF-8 (byte {})", e.valid_up_to()),
                &format!("text of {} bytes", bytes.len()),
            )
        }),
        other => Err(user_error(
            function,
            &format!("{name} must be TEXT"),
            &describe(other),
        )),
    }
}

/// Argument `i` as a number (integer or real); `None` for NULL.
pub fn number_arg(ctx: &Context<'_>, i: usize, function: &str, name: &str) -> Result<Option<f64>> {
    match ctx.get_raw(i) {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(v) => Ok(Some(v as f64)),
        ValueRef::Real(v) => Ok(Some(v)),
        other => Err(user_error(
            function,
            &format!("{name} must be a number"),
            &describe(other),
        )),
    }
}

/// Argument `i` as an integer; `None` for NULL; otherwise the error
/// `problem` (e.g. "rowid bounds must be integers or NULL").
pub fn int_arg(ctx: &Context<'_>, i: usize, function: &str, problem: &str) -> Result<Option<i64>> {
    match ctx.get_raw(i) {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(v) => Ok(Some(v)),
        other => Err(user_error(function, problem, &describe(other))),
    }
}

/// A poller of the connection running this function (it prepares nothing
/// until first asked, a millisecond into the work).
pub fn interrupt_poll(ctx: &Context<'_>) -> Result<RefCell<InterruptPoll>> {
    // Safety: the handle is the connection running this function; the
    // poller lives for this call, on this thread.
    Ok(RefCell::new(unsafe {
        InterruptPoll::new(ctx.get_connection()?.handle())
    }))
}
