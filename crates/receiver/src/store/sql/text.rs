//! A query's text, written once with PostgreSQL's `$N` placeholders. SQLite
//! reads `$N` as a *named* parameter numbered by first appearance, so
//! `WHERE b = $2 AND a = $1` would silently swap the values: the text is
//! rewritten to `?N` (bound by number) before SQLite sees it, once per
//! static query.

use std::borrow::Cow;
use std::sync::OnceLock;

/// A static query: its text, and the SQLite form made on first use.
pub struct Sql {
    text: &'static str,
    sqlite: OnceLock<Box<str>>,
}

impl Sql {
    pub const fn new(text: &'static str) -> Sql {
        Sql {
            text,
            sqlite: OnceLock::new(),
        }
    }
}

/// What a query's text can be: a static `Sql` (rewritten once) or a text
/// made at run time (a column or an index chosen by the caller), rewritten
/// each time.
pub trait Text: Sync {
    fn postgres(&self) -> &str;
    fn sqlite(&self) -> Cow<'_, str>;
}

impl Text for Sql {
    fn postgres(&self) -> &str {
        self.text
    }

    fn sqlite(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.sqlite.get_or_init(|| to_sqlite(self.text).into()))
    }
}

impl Text for str {
    fn postgres(&self) -> &str {
        self
    }

    fn sqlite(&self) -> Cow<'_, str> {
        Cow::Owned(to_sqlite(self))
    }
}

impl Text for String {
    fn postgres(&self) -> &str {
        self
    }

    fn sqlite(&self) -> Cow<'_, str> {
        Cow::Owned(to_sqlite(self))
    }
}

/// A static query, written where it is used:
/// `c.query(sql!("SELECT … WHERE id = $1"), &[&id], map)`.
macro_rules! sql {
    ($text:expr) => {{
        static Q: $crate::store::sql::Sql = $crate::store::sql::Sql::new($text);
        &Q
    }};
}
pub(crate) use sql;

/// `$N` outside quotes becomes `?N`; quoted text and identifiers are kept.
fn to_sqlite(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quote: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        match quote {
            Some(q) => {
                if ch == q {
                    quote = None;
                }
                out.push(ch);
            }
            None if ch == '\'' || ch == '"' => {
                quote = Some(ch);
                out.push(ch);
            }
            None if ch == '$' && chars.peek().is_some_and(char::is_ascii_digit) => out.push('?'),
            None => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_numbered_and_quotes_are_kept() {
        assert_eq!(
            to_sqlite("SELECT '$1', \"a$2\" FROM t WHERE b = $2 AND a = $1 AND c = $10"),
            "SELECT '$1', \"a$2\" FROM t WHERE b = ?2 AND a = ?1 AND c = ?10"
        );
        assert_eq!(to_sqlite("SELECT $ FROM t"), "SELECT $ FROM t");
    }

    /// The trap the rewrite exists for: bound by position, SQLite would
    /// swap the two values of `b = $2 AND a = $1`.
    #[test]
    fn out_of_order_placeholders_bind_by_number_on_sqlite() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let q = Sql::new("SELECT $2 || '-' || $1");
        let got: String = conn
            .query_row(&q.sqlite(), rusqlite::params!["a", "b"], |r| r.get(0))
            .unwrap();
        assert_eq!(got, "b-a");
    }
}
