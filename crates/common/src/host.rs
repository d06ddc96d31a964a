//! Which `Host` a listener on a person's machine answers. A listener bound
//! to loopback is still reachable from any page the person's browser
//! opens, through DNS rebinding: a name the attacker controls is pointed at
//! 127.0.0.1, and the browser then treats the listener as that name's
//! origin. Such a request carries the attacker's name in `Host`, so a
//! listener that answers only its own names (loopback, its bound address,
//! the names it was told it is reached by) is out of the page's reach.

/// The names a listener answers to.
#[derive(Debug, Clone, Default)]
pub struct AllowedHosts {
    /// The listener's port: a loopback `Host` naming another port is not
    /// this listener (`None`: any port).
    port: Option<u16>,
    /// Further names (lowercase, without brackets) and the port they must
    /// name, if any: a configured public URL's host (any port: a proxy may
    /// stand in front), the address the listener is bound to (its port).
    names: Vec<(String, Option<u16>)>,
}

impl AllowedHosts {
    /// `localhost`, 127.0.0.0/8 and `::1`, on `port` (or without one).
    pub fn loopback(port: Option<u16>) -> AllowedHosts {
        AllowedHosts {
            port,
            names: Vec::new(),
        }
    }

    /// Also `host` (a name or an address) on any port: the host of a
    /// public URL.
    pub fn also(self, host: &str) -> AllowedHosts {
        self.also_on(host, None)
    }

    /// Also `host` on `port` (`None`: any, or none named).
    pub fn also_on(mut self, host: &str, port: Option<u16>) -> AllowedHosts {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let host = host.to_ascii_lowercase();
        // As `allows` writes a name: an IPv6 address in its short form.
        let host = match host.parse::<std::net::Ipv6Addr>() {
            Ok(ip) => ip.to_string(),
            Err(_) => host,
        };
        self.names.push((host, port));
        self
    }

    /// Whether a request whose `Host` header is `value` is for this
    /// listener.
    pub fn allows(&self, value: &[u8]) -> bool {
        let Some((host, port)) = split(value) else {
            return false;
        };
        let name = match &host {
            url::Host::Domain(d) => d.clone(),
            url::Host::Ipv4(ip) => ip.to_string(),
            url::Host::Ipv6(ip) => ip.to_string(),
        };
        let named = |want: Option<u16>| want.is_none() || port.is_none() || port == want;
        if self
            .names
            .iter()
            .any(|(n, want)| *n == name && named(*want))
        {
            return true;
        }
        let loopback = match host {
            url::Host::Domain(d) => d == "localhost",
            url::Host::Ipv4(ip) => ip.is_loopback(),
            url::Host::Ipv6(ip) => ip.is_loopback(),
        };
        loopback && (port.is_none() || self.port.is_none() || port == self.port)
    }
}

/// `Host`'s name (a domain lowercased) and port. Only the characters a host and port are made of: no
/// user info, path or space, nothing a parser could read two ways.
fn split(value: &[u8]) -> Option<(url::Host<String>, Option<u16>)> {
    let text = std::str::from_utf8(value).ok()?.trim();
    if text.is_empty()
        || !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
    {
        return None;
    }
    let (host, port) = match text.rfind(':') {
        // `[::1]`, `[::1]:8081`, `host:8081`; a bare IPv6 address without
        // brackets is no `Host`.
        Some(i)
            if !text[i..].contains(']') && (text.starts_with('[') || !text[..i].contains(':')) =>
        {
            let port = text[i + 1..].parse::<u16>().ok()?;
            (&text[..i], Some(port))
        }
        _ => (text, None),
    };
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return None;
    }
    let host = url::Host::parse(&host.to_ascii_lowercase()).ok()?;
    Some((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_on_the_listeners_port_and_configured_names_only() {
        let hosts = AllowedHosts::loopback(Some(8081))
            .also("console.shop.example")
            .also_on("10.0.0.5", Some(8081));
        for ok in [
            "127.0.0.1:8081",
            "localhost:8081",
            "LOCALHOST:8081",
            "[::1]:8081",
            "127.0.0.1",
            "localhost",
            "127.1.2.3:8081",
            "console.shop.example",
            "console.shop.example:443",
            "10.0.0.5:8081",
        ] {
            assert!(hosts.allows(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "rebind.evil.example:8081",
            "127.0.0.1:8082",
            "localhost:9",
            "evil.example@127.0.0.1:8081",
            "127.0.0.1:8081/x",
            "127.0.0.1 :8081",
            "localhost.evil.example",
            "::1",
            "",
            "127.0.0.1:99999",
            "shop.example",
            "10.0.0.5:8082",
        ] {
            assert!(!hosts.allows(bad.as_bytes()), "{bad}");
        }
        assert!(!hosts.allows(b"\xff"));
        assert!(AllowedHosts::loopback(None).allows(b"localhost:1"));
    }
}
