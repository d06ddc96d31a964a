//! What the operator console writes and reads about its people and its
//! charts, on either backend: operators and their sessions,
//! acknowledgements and the health charts' samples.

use crate::store::StoreError;
use crate::store::console_views::*;
use crate::store::sql::{Conn, sql};
use pointhook_common::clock::rfc3339;

/// `false`: an operator of that name exists already.
pub(super) async fn add(
    c: &Conn<'_>,
    name: &str,
    hash: &str,
    now: i64,
) -> Result<bool, StoreError> {
    Ok(c.execute(
        sql!(
            "INSERT INTO operators (name, password_hash, created_at, updated_at)
             VALUES ($1, $2, $3, $3) ON CONFLICT (name) DO NOTHING"
        ),
        &[&name, &hash, &now],
    )
    .await?
        == 1)
}

/// A new password: every session of the operator ends.
pub(super) async fn reset(
    c: &Conn<'_>,
    name: &str,
    hash: &str,
    now: i64,
) -> Result<bool, StoreError> {
    let n = c
        .execute(
            sql!("UPDATE operators SET password_hash = $2, updated_at = $3 WHERE name = $1"),
            &[&name, &hash, &now],
        )
        .await?;
    end_sessions(c, name).await?;
    Ok(n == 1)
}

pub(super) async fn remove(c: &Conn<'_>, name: &str) -> Result<bool, StoreError> {
    let n = c
        .execute(sql!("DELETE FROM operators WHERE name = $1"), &[&name])
        .await?;
    end_sessions(c, name).await?;
    Ok(n == 1)
}

async fn end_sessions(c: &Conn<'_>, name: &str) -> Result<(), StoreError> {
    c.execute(sql!("DELETE FROM sessions WHERE operator = $1"), &[&name])
        .await?;
    Ok(())
}

pub(super) async fn list(c: &Conn<'_>) -> Result<Vec<OperatorView>, StoreError> {
    c.query(
        sql!(
            "SELECT name, created_at, updated_at,
                    (SELECT count(*) FROM sessions s WHERE s.operator = o.name)
             FROM operators o ORDER BY name"
        ),
        &[],
        |r| {
            Ok(OperatorView {
                name: r.get(0)?,
                created_at: rfc3339(r.get(1)?),
                updated_at: rfc3339(r.get(2)?),
                sessions: r.get(3)?,
            })
        },
    )
    .await
}

pub(super) async fn password_hash(c: &Conn<'_>, name: &str) -> Result<Option<String>, StoreError> {
    c.query_opt(
        sql!("SELECT password_hash FROM operators WHERE name = $1"),
        &[&name],
        |r| r.get(0),
    )
    .await
}

pub(super) async fn open_session(
    c: &Conn<'_>,
    token_hash: &[u8],
    operator: &str,
    csrf: &str,
    now: i64,
) -> Result<(), StoreError> {
    c.execute(
        sql!(
            "INSERT INTO sessions (token_hash, operator, csrf, created_at, seen_at)
             VALUES ($1, $2, $3, $4, $4)"
        ),
        &[&token_hash, &operator, &csrf, &now],
    )
    .await?;
    Ok(())
}

/// A session of an operator who still exists.
pub(super) async fn session(
    c: &Conn<'_>,
    token_hash: &[u8],
) -> Result<Option<Session>, StoreError> {
    c.query_opt(
        sql!(
            "SELECT s.operator, s.csrf, s.seen_at FROM sessions s
             JOIN operators o ON o.name = s.operator WHERE s.token_hash = $1"
        ),
        &[&token_hash],
        |r| {
            Ok(Session {
                operator: r.get(0)?,
                csrf: r.get(1)?,
                seen_at: r.get(2)?,
            })
        },
    )
    .await
}

pub(super) async fn touch_session(
    c: &Conn<'_>,
    token_hash: &[u8],
    now: i64,
) -> Result<(), StoreError> {
    c.execute(
        sql!("UPDATE sessions SET seen_at = $2 WHERE token_hash = $1"),
        &[&token_hash, &now],
    )
    .await?;
    Ok(())
}

pub(super) async fn close_session(c: &Conn<'_>, token_hash: &[u8]) -> Result<(), StoreError> {
    c.execute(
        sql!("DELETE FROM sessions WHERE token_hash = $1"),
        &[&token_hash],
    )
    .await?;
    Ok(())
}

/// Ends the sessions not seen since `seen_before`; how many.
pub(super) async fn close_idle_sessions(
    c: &Conn<'_>,
    seen_before: i64,
) -> Result<usize, StoreError> {
    Ok(c.execute(
        sql!("DELETE FROM sessions WHERE seen_at < $1"),
        &[&seen_before],
    )
    .await? as usize)
}

/// `false`: acknowledged already.
pub(super) async fn acknowledge(
    c: &Conn<'_>,
    item: &str,
    actor: &str,
    now: i64,
) -> Result<bool, StoreError> {
    Ok(c.execute(
        sql!(
            "INSERT INTO acknowledgements (item, actor, at) VALUES ($1, $2, $3)
             ON CONFLICT (item) DO NOTHING"
        ),
        &[&item, &actor, &now],
    )
    .await?
        == 1)
}

pub(super) async fn is_acknowledged(c: &Conn<'_>, item: &str) -> Result<bool, StoreError> {
    c.query_one(
        sql!("SELECT EXISTS (SELECT 1 FROM acknowledgements WHERE item = $1)"),
        &[&item],
        |r| r.get(0),
    )
    .await
}

/// Each sample, its minute's value replaced when recorded again.
pub(super) async fn record_samples(c: &Conn<'_>, samples: &[Sample]) -> Result<(), StoreError> {
    for s in samples {
        c.execute(
            sql!(
                "INSERT INTO samples (minute, instance, series, value) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (minute, instance, series) DO UPDATE SET value = excluded.value"
            ),
            &[&s.minute, &s.instance, &s.series, &s.value],
        )
        .await?;
    }
    Ok(())
}

pub(super) async fn prune_samples(c: &Conn<'_>, before: i64) -> Result<usize, StoreError> {
    Ok(
        c.execute(sql!("DELETE FROM samples WHERE minute < $1"), &[&before])
            .await? as usize,
    )
}

/// Every sample since `since` (unix ms), oldest first.
pub(super) async fn samples(c: &Conn<'_>, since: i64) -> Result<Vec<Sample>, StoreError> {
    c.query(
        sql!(
            "SELECT minute, instance, series, value FROM samples WHERE minute >= $1
             ORDER BY minute"
        ),
        &[&since],
        |r| {
            Ok(Sample {
                minute: r.get(0)?,
                instance: r.get(1)?,
                series: r.get(2)?,
                value: r.get(3)?,
            })
        },
    )
    .await
}

/// Decisions recorded after the one with id `id`: how many, and the
/// newest id (`id` when none).
pub(super) async fn decisions_after(c: &Conn<'_>, id: i64) -> Result<(i64, i64), StoreError> {
    c.query_one(
        sql!("SELECT count(*), coalesce(max(id), $1) FROM decisions WHERE id > $1"),
        &[&id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .await
}
