//! Store handles and their URLs (the reference's `_resolve_store_dsn`,
//! `db.py:296`, and `sqlite_file_path`, `config.py:4993`).

use std::path::{Path, PathBuf};

use crate::{
    config::Config,
    error::{Error, Result},
};

/// The implicit handle, always `storage.database_url`.
pub const DEFAULT_STORE: &str = "default";

/// Where a store handle's SQLite file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreLocation {
    /// The handle asked for.
    pub handle: String,
    /// The URL it resolved to.
    pub url: String,
    /// The database file, absolute: a relative URL path is taken against the
    /// process working directory (never the config file's directory), and `~`
    /// is not expanded, as the SQLite driver does.
    pub path: PathBuf,
}

/// The URL a handle names: `default` is `storage.database_url` (a `default`
/// key of `storage.stores` is ignored), any other handle must be an exact key of
/// `storage.stores`.
///
/// # Errors
///
/// [`Error::UnknownStore`] for a handle that is not there (the message keeps the
/// reference's `Unknown store 'x'` and lists the known handles).
pub fn store_url<'c>(config: &'c Config, handle: &str) -> Result<&'c str> {
    if handle == DEFAULT_STORE {
        return Ok(&config.storage.database_url);
    }
    config
        .storage
        .stores
        .get(handle)
        .map(String::as_str)
        .ok_or_else(|| Error::UnknownStore {
            handle: handle.to_owned(),
            known: config
                .storage
                .stores
                .keys()
                .filter(|name| name.as_str() != DEFAULT_STORE)
                .cloned()
                .collect(),
        })
}

/// Resolves a store handle to its SQLite file.
///
/// Accepted: `sqlite+aiosqlite:///rel/p.db` (relative to `cwd`) and
/// `sqlite+aiosqlite:////abs/p.db`.
///
/// # Errors
///
/// [`Error::UnknownStore`]; [`Error::EmptyStoreUrl`] for `""`;
/// [`Error::InMemoryStore`] for `sqlite+aiosqlite://` and `:memory:` (an empty
/// private database: the reference's query fails with "no such table");
/// [`Error::SyncDriver`] for `sqlite:///...` (the reference requires the async
/// driver); [`Error::UnsupportedStore`] for PostgreSQL and anything else.
pub fn resolve_store(config: &Config, handle: &str, cwd: &Path) -> Result<StoreLocation> {
    let url = store_url(config, handle)?;
    let fail_with =
        |make: fn(String, String) -> Error| Err(make(handle.to_owned(), url.to_owned()));
    if url.is_empty() {
        return Err(Error::EmptyStoreUrl {
            handle: handle.to_owned(),
        });
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return fail_with(|handle, url| Error::UnsupportedStore { handle, url });
    };
    match scheme {
        "sqlite+aiosqlite" => {}
        "sqlite" | "sqlite+pysqlite" => {
            return fail_with(|handle, url| Error::SyncDriver { handle, url })
        }
        _ => return fail_with(|handle, url| Error::UnsupportedStore { handle, url }),
    }
    // `sqlite_file_path`: the text after the first `:///`; none, empty or
    // `:memory:` is an in-memory database.
    let file = match rest.strip_prefix('/') {
        Some(file) => file,
        None if rest.is_empty() => "",
        // `sqlite+aiosqlite://host/...`: SQLite URLs carry no host.
        None => return fail_with(|handle, url| Error::UnsupportedStore { handle, url }),
    };
    // SQLAlchemy drops a query string (`?mode=ro`) from the file name.
    let file = file.split_once('?').map_or(file, |(file, _)| file);
    if file.is_empty() || file == ":memory:" {
        return fail_with(|handle, url| Error::InMemoryStore { handle, url });
    }
    Ok(StoreLocation {
        handle: handle.to_owned(),
        url: url.to_owned(),
        path: cwd.join(file),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_with(database_url: &str, stores: &[(&str, &str)]) -> Config {
        let mut config = Config::default();
        config.storage.database_url = database_url.to_owned();
        config.storage.stores = stores
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        config
    }

    #[test]
    fn default_is_database_url_even_with_a_default_key() -> Result<()> {
        let config = config_with(
            "sqlite+aiosqlite:///rel/p.db",
            &[("default", "sqlite+aiosqlite:////elsewhere.db")],
        );
        let location = resolve_store(&config, "default", Path::new("/work"))?;
        assert_eq!(location.path, PathBuf::from("/work/rel/p.db"));
        Ok(())
    }

    #[test]
    fn absolute_and_named_stores() -> Result<()> {
        let config = config_with(
            "sqlite+aiosqlite:///./p.db",
            &[("a", "sqlite+aiosqlite:////abs/a.db")],
        );
        let location = resolve_store(&config, "a", Path::new("/work"))?;
        assert_eq!(location.path, PathBuf::from("/abs/a.db"));
        let tilde = config_with("sqlite+aiosqlite:///~/p.db", &[]);
        assert_eq!(
            resolve_store(&tilde, "default", Path::new("/w"))?.path,
            PathBuf::from("/w/~/p.db")
        );
        Ok(())
    }

    #[test]
    fn unknown_handle_names_the_known_ones() {
        let config = config_with("sqlite+aiosqlite:///p.db", &[("b", "x"), ("a", "y")]);
        let error = resolve_store(&config, "A", Path::new("/")).expect_err("case-sensitive");
        assert_eq!(
            error.to_string(),
            "Unknown store 'A' (known: default, a, b)"
        );
    }

    #[test]
    fn refused_urls() {
        type Expect = fn(&Error) -> bool;
        let cases: [(&str, Expect); 7] = [
            ("", |e| matches!(e, Error::EmptyStoreUrl { .. })),
            ("sqlite+aiosqlite://", |e| {
                matches!(e, Error::InMemoryStore { .. })
            }),
            ("sqlite+aiosqlite:///:memory:", |e| {
                matches!(e, Error::InMemoryStore { .. })
            }),
            ("sqlite:///x.db", |e| matches!(e, Error::SyncDriver { .. })),
            ("postgresql+asyncpg://u@h/db", |e| {
                matches!(e, Error::UnsupportedStore { .. })
            }),
            ("./p.db", |e| matches!(e, Error::UnsupportedStore { .. })),
            ("sqlite+aiosqlite://host/p.db", |e| {
                matches!(e, Error::UnsupportedStore { .. })
            }),
        ];
        for (url, expected) in cases {
            let config = config_with(url, &[]);
            let error = resolve_store(&config, "default", Path::new("/")).expect_err(url);
            assert!(expected(&error), "{url}: {error}");
        }
    }
}
