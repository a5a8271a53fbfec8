//! The reference's token bucket on `/query` (`particles/api/_rate_limit.py`):
//! one bucket per real client host (IPv6 by its /64, IPv4-mapped as IPv4),
//! capacity and refill both `api.rate_limit_per_minute`, new buckets full, at
//! most [`MAX_BUCKETS`] tracked.

use std::{collections::HashMap, net::IpAddr, sync::Mutex};

/// The most clients tracked at once (the reference's `_MAX_BUCKETS`).
pub(crate) const MAX_BUCKETS: usize = 10_000;

/// The 429's detail, verbatim.
pub(crate) const RATE_LIMITED: &str = "Rate limit exceeded for this client. This endpoint drives \
a paid model call per request; retry after a short wait or raise api.rate_limit_per_minute.";

/// Per-key `(tokens, last refill)` in seconds of a monotonic clock.
#[derive(Debug, Default)]
pub(crate) struct Buckets {
    buckets: Mutex<HashMap<String, (f64, f64)>>,
}

/// The bucket key of a client host: an IPv6 address by its /64 (one host is
/// routinely handed a whole /64), an IPv4-mapped one as its IPv4, anything
/// else as it is.
pub(crate) fn bucket_key(host: &str) -> String {
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V6(ip)) => match ip.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let network = u128::from(ip) & (u128::MAX << 64);
                format!("{}/64", std::net::Ipv6Addr::from(network))
            }
        },
        Ok(IpAddr::V4(_)) | Err(_) => host.to_owned(),
    }
}

impl Buckets {
    /// Refills `key`'s bucket for the time since it was last seen, then spends
    /// one token; `false` (refuse with 429) when less than one is left.
    pub(crate) fn allow(&self, key: &str, rate_per_minute: i64, now: f64) -> bool {
        let capacity = rate_per_minute as f64;
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !buckets.contains_key(key) && buckets.len() >= MAX_BUCKETS {
            make_room(&mut buckets, now);
        }
        let (tokens, last) = buckets.get(key).copied().unwrap_or((capacity, now));
        let tokens = capacity.min(tokens + (now - last) * rate_per_minute as f64 / 60.0);
        if tokens < 1.0 {
            buckets.insert(key.to_owned(), (tokens, now));
            return false;
        }
        buckets.insert(key.to_owned(), (tokens - 1.0, now));
        true
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.buckets.lock().map(|b| b.len()).unwrap_or(0)
    }
}

/// Drops buckets idle for a minute (they have refilled, so forgetting them
/// changes nothing), then the least recently seen until a new one fits.
fn make_room(buckets: &mut HashMap<String, (f64, f64)>, now: f64) {
    buckets.retain(|_, (_, last)| now - *last < 60.0);
    if buckets.len() < MAX_BUCKETS {
        return;
    }
    let mut by_age: Vec<(String, f64)> = buckets
        .iter()
        .map(|(key, (_, last))| (key.clone(), *last))
        .collect();
    by_age.sort_by(|a, b| a.1.total_cmp(&b.1));
    for (key, _) in by_age.into_iter().take(buckets.len() - MAX_BUCKETS + 1) {
        buckets.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_group_ipv6_by_64_and_unmap_ipv4() {
        assert_eq!(bucket_key("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
        assert_eq!(bucket_key("2001:db8::1"), "2001:db8::/64");
        assert_eq!(bucket_key("::1"), "::/64");
        assert_eq!(bucket_key("::ffff:10.1.2.3"), "10.1.2.3");
        assert_eq!(bucket_key("127.0.0.1"), "127.0.0.1");
        assert_eq!(bucket_key("not-an-ip"), "not-an-ip");
    }

    #[test]
    fn a_bucket_holds_a_minute_and_refills_over_one() {
        let buckets = Buckets::default();
        for _ in 0..3 {
            assert!(buckets.allow("a", 3, 0.0));
        }
        assert!(!buckets.allow("a", 3, 0.0), "capacity is the rate");
        assert!(
            buckets.allow("b", 3, 0.0),
            "another client has its own bucket"
        );
        assert!(!buckets.allow("a", 3, 10.0), "half a token after 10 s");
        assert!(buckets.allow("a", 3, 20.5), "one token after 20 s");
    }

    #[test]
    fn the_table_stays_bounded() {
        let buckets = Buckets::default();
        for i in 0..MAX_BUCKETS + 5 {
            assert!(buckets.allow(&format!("k{i}"), 60, i as f64 * 0.001));
        }
        assert!(buckets.len() <= MAX_BUCKETS);
    }
}
