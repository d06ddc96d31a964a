//! Items seen and dealt with leave the inbox: one, or several at once,
//! each recorded in the audit as the other actions are.

use super::{About, Acted, Actions, Done};
use crate::domain::Action;
use crate::operators::Actor;
use crate::store::StoreError;

impl Actions {
    /// An item seen and dealt with leaves the inbox.
    pub async fn acknowledge(
        &self,
        who: &Actor,
        item: &str,
        account: Option<String>,
        order_id: Option<String>,
        detail: String,
    ) -> Result<Acted<()>, StoreError> {
        let about = About {
            item: item.to_string(),
            account,
            order_id,
            detail,
        };
        let run = async {
            Ok(
                if self
                    .store
                    .acknowledge(item.to_string(), who.name.clone(), self.now())
                    .await?
                {
                    Done::Done(())
                } else {
                    Done::Refused(format!("{item} was acknowledged already"))
                },
            )
        };
        self.audited(who, Action::Acknowledge, about, run, |_| {
            "acknowledged".into()
        })
        .await
    }

    /// Several items seen at once ("acknowledge all"), recorded as one
    /// action on `item`; done: how many were not acknowledged already.
    pub async fn acknowledge_all(
        &self,
        who: &Actor,
        item: &str,
        items: Vec<String>,
        detail: String,
    ) -> Result<Acted<usize>, StoreError> {
        let about = About {
            item: item.to_string(),
            account: None,
            order_id: None,
            detail,
        };
        let run = async {
            let mut newly = 0;
            for i in items {
                if self
                    .store
                    .acknowledge(i, who.name.clone(), self.now())
                    .await?
                {
                    newly += 1;
                }
            }
            Ok(Done::Done(newly))
        };
        self.audited(who, Action::Acknowledge, about, run, |n| {
            format!("{n} acknowledged")
        })
        .await
    }
}
