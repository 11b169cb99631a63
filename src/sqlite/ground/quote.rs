//! Names and texts quoted into SQL: every table or column name that reaches
//! generated SQL goes through [`quote_ident`], every text through
//! [`quote_literal`] where it cannot be bound.

/// `name` as an SQL identifier: in double quotes, inner quotes doubled.
/// Every table or column name that reaches generated SQL goes through here.
///
/// ```
/// use dedup::sqlite::ground::quote::quote_ident;
/// assert_eq!(quote_ident("pages"), "\"pages\"");
/// assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
/// ```
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `text` as an SQL string literal: in single quotes, inner quotes doubled.
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}
