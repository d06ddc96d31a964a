//! Query strings as the platform's requests and the sandbox's callers write
//! them.

/// The query parameters of a request, in order, percent-decoded.
#[derive(Debug, Default)]
pub struct Query(Vec<(String, String)>);

impl Query {
    pub fn parse(raw: &str) -> Query {
        Query(
            form_urlencoded::parse(raw.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The first value of `name`, if present and not empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
    }

    /// The account a request names: `customer`, or `cliente` and `client`
    /// (the names the platform's docs use).
    pub fn account(&self) -> Option<&str> {
        ["customer", "cliente", "client"]
            .into_iter()
            .find_map(|name| self.get(name))
    }
}
