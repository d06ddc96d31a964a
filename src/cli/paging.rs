//! Every list pages: at most `--limit` rows (500 the most, said, not
//! silently cut), from `--before` on, and a footer when more follow: how
//! many (counted a page at a time, up to `COUNTED`) and the `--before`
//! that shows them. The pages are the store's, as the console reads them.

use std::future::Future;

use clap::Args;
use serde::Serialize;

use pointhook::store::console_views::Page;
use pointhook::store::{DEFAULT_LIMIT, MAX_LIMIT, StoreError};

use super::render::{self, Format};

/// The rows counted after a page before the footer says "at least".
const COUNTED: usize = 1000;
/// The pages read to count them: a filter no index serves reads a window
/// of rows per page, so a rare match is not hunted through the whole table.
const PAGES_COUNTED: usize = 10;

/// `--limit` and `--before`, for every list.
#[derive(Debug, Clone, Args)]
pub struct PageArgs {
    /// Rows on this page, at most 500; the footer says how to see more.
    #[arg(long, default_value_t = DEFAULT_LIMIT, value_parser = limit)]
    pub limit: usize,
    /// Start after this row: the value the last page's footer gave.
    #[arg(long, value_name = "ID")]
    pub before: Option<String>,
}

fn limit(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n @ 1..=MAX_LIMIT) => Ok(n),
        Ok(_) => Err(format!(
            "a page holds 1 to {MAX_LIMIT} rows; page on with the --before its footer gives"
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Prints the page as `human` says (or JSON), then the footer: after the
/// table, or on stderr under `--json` (stdout stays one JSON array).
pub fn print<T: Serialize>(
    format: &Format,
    listed: &Listed<T>,
    human: impl FnOnce(&Vec<T>) -> String,
) -> anyhow::Result<()> {
    render::print(format, &listed.rows, human)?;
    match &listed.more {
        Some(more) if format.json => eprint!("{}", more.line()),
        Some(more) => render::say(&more.line())?,
        None => {}
    }
    Ok(())
}

/// A page of rows, and what follows it.
pub struct Listed<T> {
    pub rows: Vec<T>,
    pub more: Option<More>,
}

/// Rows after the page: how many, and where the next page starts.
pub struct More {
    pub count: usize,
    /// Counting stopped at `COUNTED` rows (or `PAGES_COUNTED` pages).
    pub at_least: bool,
    pub before: String,
}

impl More {
    /// The footer line.
    pub fn line(&self) -> String {
        let count = if self.at_least {
            format!("at least {}", self.count)
        } else {
            self.count.to_string()
        };
        format!(
            "{count} more: --before {}\n",
            pointhook_common::text::printable(&self.before)
        )
    }
}

/// Reads the page `args` asks for through `page` (a cursor, a limit), then
/// counts what follows it.
pub async fn list<T, F, Fut>(args: &PageArgs, mut page: F) -> anyhow::Result<Listed<T>>
where
    F: FnMut(Option<String>, usize) -> Fut,
    Fut: Future<Output = Result<Page<T>, StoreError>>,
{
    let first = page(args.before.clone(), args.limit).await?;
    let Some(before) = first.next else {
        return Ok(Listed {
            rows: first.rows,
            more: None,
        });
    };
    let (mut count, mut cursor, mut pages) = (0, Some(before.clone()), 0);
    while let Some(at) = cursor.take() {
        if count >= COUNTED || pages == PAGES_COUNTED {
            cursor = Some(at);
            break;
        }
        let next = page(Some(at), MAX_LIMIT).await?;
        count += next.rows.len();
        cursor = next.next;
        pages += 1;
    }
    let more = (count > 0 || cursor.is_some()).then(|| More {
        count,
        at_least: cursor.is_some(),
        before,
    });
    Ok(Listed {
        rows: first.rows,
        more,
    })
}

/// A page of rows keyed by a number, newest first (what the store lists
/// with a limit and an id to start below): a full page may have a next,
/// which `list` finds out when it counts.
pub fn by_id<T>(rows: Vec<T>, limit: usize, id: impl Fn(&T) -> i64) -> Page<T> {
    let next = (rows.len() >= limit)
        .then(|| rows.last().map(|r| id(r).to_string()))
        .flatten();
    Page { rows, next }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(
        total: i64,
    ) -> impl FnMut(Option<String>, usize) -> std::future::Ready<Result<Page<i64>, StoreError>>
    {
        move |cursor, limit| {
            let below = cursor.map_or(total + 1, |c| c.parse().unwrap());
            let rows: Vec<i64> = (1..below).rev().take(limit).collect();
            std::future::ready(Ok(by_id(rows, limit, |n| *n)))
        }
    }

    fn args(limit: usize) -> PageArgs {
        PageArgs {
            limit,
            before: None,
        }
    }

    #[tokio::test]
    async fn the_footer_counts_what_follows() {
        let listed = list(&args(3), numbers(10)).await.unwrap();
        assert_eq!(listed.rows, [10, 9, 8]);
        assert_eq!(listed.more.unwrap().line(), "7 more: --before 8\n");
        let all = list(&args(10), numbers(10)).await.unwrap();
        assert!(all.more.is_none());
        let many = list(&args(1), numbers(5000)).await.unwrap();
        assert_eq!(
            many.more.unwrap().line(),
            "at least 1000 more: --before 5000\n"
        );
    }
}
