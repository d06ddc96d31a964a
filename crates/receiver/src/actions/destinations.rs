//! A destination enabled again, or its failed, paused and given-up events
//! sent again since a time: each recorded in the audit as the other
//! actions are.

use super::{About, Acted, Actions, Done};
use crate::domain::Action;
use crate::operators::Actor;
use crate::store::{Recovery, StoreError};

/// What an action on destination `name` is about, for the audit.
fn about(name: &str, detail: String) -> About {
    About {
        item: format!("destination:{name}"),
        account: None,
        order_id: None,
        detail,
    }
}

impl Actions {
    /// New events go to `name` again (what waits for it needs a recovery).
    pub async fn enable_destination(
        &self,
        who: &Actor,
        name: &str,
    ) -> Result<Acted<()>, StoreError> {
        let shown = pointhook_common::text::printable(name);
        let about = about(name, format!("enable destination {shown}"));
        let run = async {
            Ok(if self.store.enable_destination(name, self.now()).await? {
                Done::Done(())
            } else {
                Done::Refused(format!("no destination {shown}"))
            })
        };
        self.audited(who, Action::Enable, about, run, |_| "enabled".into())
            .await
    }

    /// New events for `name` wait, paused, until it is enabled again.
    pub async fn disable_destination(
        &self,
        who: &Actor,
        name: &str,
        reason: &str,
    ) -> Result<Acted<()>, StoreError> {
        let shown = pointhook_common::text::printable(name);
        let about = about(
            name,
            format!(
                "disable destination {shown}: {}",
                pointhook_common::text::printable(reason)
            ),
        );
        let run = async {
            Ok(
                if self
                    .store
                    .disable_destination(name, reason, self.now())
                    .await?
                {
                    Done::Done(())
                } else {
                    Done::Refused(format!("no destination {shown}"))
                },
            )
        };
        self.audited(who, Action::Disable, about, run, |_| "disabled".into())
            .await
    }

    /// Every event for `name` that failed, was paused or gave up since
    /// `since` (unix ms; `None`: since the failure's start, as the
    /// destination keeps it), whenever it was decided, is sent again,
    /// oldest first. Done: (the time recovered from, events queued).
    pub async fn recover_destination(
        &self,
        who: &Actor,
        name: &str,
        since: Option<i64>,
    ) -> Result<Acted<(Option<String>, u64)>, StoreError> {
        let shown = pointhook_common::text::printable(name);
        let from = match since {
            Some(t) => Some(pointhook_common::clock::rfc3339(t)),
            None => self
                .store
                .destination(name, self.now())
                .await?
                .and_then(|d| d.recover_since),
        };
        let about = about(
            name,
            match &from {
                Some(t) => format!("recover destination {shown} since {t}"),
                None => format!("recover destination {shown}: everything that waits"),
            },
        );
        let run = async {
            Ok(
                match self
                    .store
                    .recover_destination(name, since, self.now())
                    .await?
                {
                    Recovery::Queued(n) => Done::Done((from.clone(), n)),
                    Recovery::NotFound => Done::Refused(format!("no destination {shown}")),
                    Recovery::Disabled => {
                        Done::Refused(format!("destination {shown} is disabled: enable it first"))
                    }
                },
            )
        };
        self.audited(who, Action::Recover, about, run, |(_, n)| {
            format!("{n} event(s) queued again")
        })
        .await
    }
}
