//! A few values keyed by URL (what the guard knows of each chart-data or stop URL): a list,
//! searched in order. A page sends to a handful of URLs, and a list is less code in the module
//! than a `BTreeMap` (or `BTreeSet`) per value type, each a copy of the tree's code (issue #43).

/// The most URLs one list keeps: a new one beyond them takes the place of the oldest.
pub const MAX_URLS: usize = 64;

/// Values keyed by URL, each URL once, at most [`MAX_URLS`].
#[derive(Debug)]
pub struct ByUrl<V>(Vec<(String, V)>);

impl<V> Default for ByUrl<V> {
    fn default() -> Self {
        ByUrl(Vec::new())
    }
}

impl<V> ByUrl<V> {
    pub fn get(&self, url: &str) -> Option<&V> {
        self.0.iter().find(|(u, _)| u == url).map(|(_, v)| v)
    }

    pub fn contains(&self, url: &str) -> bool {
        self.get(url).is_some()
    }

    /// Sets `url`'s value, in place of the one it had.
    pub fn insert(&mut self, url: String, value: V) {
        match self.0.iter_mut().find(|(u, _)| *u == url) {
            Some((_, v)) => *v = value,
            None => {
                if self.0.len() >= MAX_URLS {
                    self.0.remove(0);
                }
                self.0.push((url, value));
            }
        }
    }

    pub fn remove(&mut self, url: &str) -> Option<V> {
        let at = self.0.iter().position(|(u, _)| u == url)?;
        Some(self.0.remove(at).1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_url_holds_one_value_until_removed() {
        let mut m = ByUrl::default();
        assert_eq!(m.get("/a"), None);
        m.insert("/a".to_owned(), 1);
        m.insert("/b".to_owned(), 2);
        m.insert("/a".to_owned(), 3);
        assert_eq!((m.get("/a"), m.get("/b")), (Some(&3), Some(&2)));
        assert_eq!(m.0.len(), 2);
        assert_eq!(m.remove("/a"), Some(3));
        assert!(!m.contains("/a") && m.contains("/b"));
        assert_eq!(m.remove("/a"), None);
        for n in 0..MAX_URLS {
            m.insert(format!("/u{n}"), n);
        }
        assert_eq!(m.0.len(), MAX_URLS, "bounded");
        assert!(
            !m.contains("/b") && m.contains("/u0"),
            "the oldest went first"
        );
    }
}
