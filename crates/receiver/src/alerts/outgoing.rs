//! A message as every channel sends it: the webhook's JSON
//! (`{"text","severity","kind","url","items"}`, which chat tools accept as
//! it is) and the e-mail's subject and body, each with the console link.

use serde::Serialize;

use crate::domain::attention::Message;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outgoing {
    pub text: String,
    pub severity: &'static str,
    pub kind: &'static str,
    /// Into the console (`admin.public_url` and the item's path).
    pub url: String,
    pub items: Vec<String>,
}

impl Outgoing {
    /// `m` with its link under `public_url` (the console's address as a
    /// person's browser reaches it).
    pub fn new(m: &Message, public_url: &str) -> Outgoing {
        Outgoing {
            text: pointhook_common::text::printable(&m.text).into_owned(),
            severity: m.severity.as_str(),
            kind: m.kind.as_str(),
            url: format!("{}{}", public_url.trim_end_matches('/'), m.path),
            items: m
                .items
                .iter()
                .map(|i| pointhook_common::text::printable(i).into_owned())
                .collect(),
        }
    }

    /// An e-mail subject: short, one line.
    pub fn subject(&self) -> String {
        let mut s = format!("[pointhook] {}", self.text);
        if s.chars().count() > 120 {
            s = s.chars().take(117).collect::<String>() + "...";
        }
        s
    }

    /// An e-mail body: the text, each item, and the link.
    pub fn body(&self) -> String {
        let mut b = format!("{}\n\n", self.text);
        if self.items.len() > 1 {
            for i in &self.items {
                b.push_str(&format!("- {i}\n"));
            }
            b.push('\n');
        }
        b.push_str(&format!("Open it in the console: {}\n", self.url));
        b
    }
}
