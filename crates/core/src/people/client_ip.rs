//! The client's address, for sign-in throttling.
//!
//! By default it is the TCP peer. Behind a TLS-terminating proxy the peer is
//! the proxy for everyone, so an operator lists the proxies
//! (`console.trusted_proxies`, addresses or CIDR ranges): only when the peer
//! is one of them are `X-Forwarded-For` (else `Forwarded: for=`) read, from
//! the right, skipping the listed proxies; the first address that is not a
//! listed proxy is the client. A client cannot forge its way past this: the
//! entries it writes itself are to the left of the one its proxy appends.

use http::HeaderMap;
use std::net::IpAddr;

/// One address range: an address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    network: IpAddr,
    prefix: u8,
}

impl Range {
    fn parse(s: &str) -> Result<Range, String> {
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let network: IpAddr = addr.trim().parse().map_err(|_| format!("`{s}` is not an IP address or CIDR range"))?;
        let network = network.to_canonical();
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("`{s}`: the prefix length must be a number from 0 to {max}"))?,
        };
        Ok(Range { network, prefix })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// The configured proxies whose forwarding headers are believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Vec<Range>);

impl TrustedProxies {
    pub fn parse(entries: &[String]) -> Result<TrustedProxies, String> {
        entries.iter().map(|e| Range::parse(e)).collect::<Result<_, _>>().map(TrustedProxies)
    }

    fn contains(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|r| r.contains(ip))
    }

    /// The client behind `peer` (see the module doc), as text.
    pub fn client(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> String {
        let Some(peer) = peer.map(|p| p.to_canonical()) else { return "unknown".into() };
        if !self.contains(peer) {
            return peer.to_string();
        }
        let chain = forwarded_chain(headers);
        for hop in chain.iter().rev() {
            match hop.parse::<IpAddr>() {
                Ok(ip) if self.contains(ip) => continue,
                Ok(ip) => return ip.to_canonical().to_string(),
                // Not an address (`unknown`, an obfuscated id): it is still
                // what the proxy reported for this client.
                Err(_) => return hop.chars().take(64).collect(),
            }
        }
        // Every hop is a listed proxy: the leftmost is the origin.
        chain.first().cloned().unwrap_or_else(|| peer.to_string())
    }
}

/// The addresses of `X-Forwarded-For` (all of its lines, in order), or else
/// the `for=` parameters of `Forwarded` (RFC 7239), ports and brackets removed.
fn forwarded_chain(headers: &HeaderMap) -> Vec<String> {
    let xff: Vec<String> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    if !xff.is_empty() {
        return xff;
    }
    headers
        .get_all("forwarded")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|element| {
            element.split(';').find_map(|pair| {
                let (k, v) = pair.split_once('=')?;
                k.trim().eq_ignore_ascii_case("for").then(|| node_address(v.trim().trim_matches('"')))
            })
        })
        .collect()
}

/// `192.0.2.60`, `192.0.2.60:4711`, `[2001:db8::1]` or `[2001:db8::1]:4711` → the address.
fn node_address(node: &str) -> String {
    if let Some(rest) = node.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default().to_owned();
    }
    match node.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && port.chars().all(|c| c.is_ascii_digit()) => host.to_owned(),
        _ => node.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    fn proxies(list: &[&str]) -> TrustedProxies {
        TrustedProxies::parse(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn without_listed_proxies_the_peer_is_the_client_whatever_the_headers_say() {
        let none = TrustedProxies::default();
        let forged = headers(&[("x-forwarded-for", "1.1.1.1"), ("forwarded", "for=2.2.2.2")]);
        assert_eq!(none.client(ip("10.0.0.5"), &forged), "10.0.0.5");
        assert_eq!(proxies(&["10.0.0.1"]).client(ip("10.0.0.5"), &forged), "10.0.0.5", "peer not listed");
        assert_eq!(none.client(None, &forged), "unknown");
    }

    #[test]
    fn behind_a_listed_proxy_the_rightmost_unlisted_hop_is_the_client() {
        let p = proxies(&["10.0.0.0/8", "::1"]);
        let h = headers(&[("x-forwarded-for", "6.6.6.6, 203.0.113.7, 10.1.2.3")]);
        assert_eq!(p.client(ip("10.0.0.1"), &h), "203.0.113.7", "the client's own (forged) entry is to the left");
        let h = headers(&[("x-forwarded-for", "6.6.6.6"), ("x-forwarded-for", "203.0.113.9")]);
        assert_eq!(p.client(ip("::1"), &h), "203.0.113.9", "several header lines are one list");
        let h = headers(&[("forwarded", r#"for=6.6.6.6, for="[2001:db8::7]:4711";proto=https"#)]);
        assert_eq!(p.client(ip("10.9.9.9"), &h), "2001:db8::7");
        let h = headers(&[("forwarded", "for=198.51.100.4:8443")]);
        assert_eq!(p.client(ip("10.9.9.9"), &h), "198.51.100.4");
        assert_eq!(p.client(ip("10.9.9.9"), &HeaderMap::new()), "10.9.9.9", "no header: the proxy itself");
        let h = headers(&[("x-forwarded-for", "10.3.3.3, 10.2.2.2")]);
        assert_eq!(p.client(ip("10.0.0.1"), &h), "10.3.3.3", "all hops listed: the leftmost");
        let h = headers(&[("x-forwarded-for", "::ffff:198.51.100.1")]);
        assert_eq!(p.client(ip("::ffff:10.0.0.1"), &h), "198.51.100.1", "IPv4-mapped addresses compare as IPv4");
    }

    #[test]
    fn ranges_parse_and_match() {
        assert!(Range::parse("192.168.0.0/16").unwrap().contains("192.168.44.1".parse().unwrap()));
        assert!(!Range::parse("192.168.0.0/16").unwrap().contains("192.169.0.1".parse().unwrap()));
        assert!(Range::parse("0.0.0.0/0").unwrap().contains("8.8.8.8".parse().unwrap()));
        assert!(Range::parse("fd00::/8").unwrap().contains("fd12::1".parse().unwrap()));
        assert!(!Range::parse("fd00::/8").unwrap().contains("10.0.0.1".parse().unwrap()));
        for bad in ["", "10.0.0.0/33", "::/129", "example.com", "10.0.0.0/x"] {
            assert!(Range::parse(bad).is_err(), "{bad}");
        }
    }
}
