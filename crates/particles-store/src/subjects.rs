//! A typed subject reference resolved as the reference's `particles query --subject`
//! resolves it (`store/subject_store.py` `lookup_subject`; spec: config-and-stores
//! §6.3): an exact id, else a pool of id-prefix, name and alias matches.
//!
//! The comparisons are SQLite's own, so they are run as SQL here too: `LIKE` folds
//! ASCII only, and `lower(canonical_name)` folds ASCII only while the reference
//! lowers the typed text with Python's full Unicode `str.lower()`. A canonical name
//! with a non-ASCII capital (`Émile Zola`) therefore never matches by name; only an
//! alias (whose key is stored already lowered by Python) reaches it.

use particles_model::python_repr;
use rusqlite::OptionalExtension;

use crate::{
    error::{query_error, Result},
    Store,
};

/// How many candidates an ambiguity message names before `, and more`.
const AMBIGUOUS_SHOWN: usize = 5;

/// How a pooled subject matched the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchedBy {
    /// Its id starts with the reference (SQLite `LIKE`, ASCII case-insensitive).
    IdPrefix,
    /// Its canonical name, lowered by SQLite, equals the reference lowered by Python.
    Name,
    /// One of its aliases does (consulted only when no name matched).
    Alias,
}

impl MatchedBy {
    /// The reference's label in an ambiguity message.
    pub fn label(self) -> &'static str {
        match self {
            MatchedBy::IdPrefix => "ID prefix",
            MatchedBy::Name => "name",
            MatchedBy::Alias => "alias",
        }
    }
}

/// One subject of an ambiguous reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectCandidate {
    /// The subject's id.
    pub id: String,
    /// Its canonical name.
    pub canonical_name: String,
    /// How it matched.
    pub matched: MatchedBy,
}

/// What a subject reference resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubjectResolution {
    /// Exactly one subject: query by its id.
    Found(String),
    /// Nothing matched (or the reference was blank).
    NoMatch,
    /// Several subjects matched; the reference refuses to pick one.
    Ambiguous {
        /// The reference as compared (trimmed).
        reference: String,
        /// The first candidates, in pool order (id prefixes by id, then names or
        /// aliases by creation time and id), at most five.
        shown: Vec<SubjectCandidate>,
        /// Whether the pool held more than those shown.
        more: bool,
    },
}

impl SubjectResolution {
    /// The reference CLI's message for a reference it refuses (exit code 1), given
    /// the text as typed; `None` when it resolved.
    pub fn refusal(&self, typed: &str) -> Option<String> {
        match self {
            SubjectResolution::Found(_) => None,
            SubjectResolution::NoMatch => Some(format!(
                "No subject matches {} by ID, ID prefix, or name.",
                python_repr(typed)
            )),
            SubjectResolution::Ambiguous {
                reference,
                shown,
                more,
            } => {
                let listing: Vec<String> = shown
                    .iter()
                    .map(|candidate| {
                        let head: String = candidate.id.chars().take(8).collect();
                        format!(
                            "{head}… {} (by {})",
                            candidate.canonical_name,
                            candidate.matched.label()
                        )
                    })
                    .collect();
                Some(format!(
                    "Subject {} is ambiguous: it matches {}{}. Pass more characters of the ID you mean.",
                    python_repr(reference),
                    listing.join("; "),
                    if *more { ", and more" } else { "" }
                ))
            }
        }
    }
}

/// Resolves `reference` in `store` as the reference's `lookup_subject` does:
///
/// 1. trimmed of Python's whitespace; blank matches nothing;
/// 2. an exact id (case-sensitive) is the answer at once;
/// 3. otherwise a pool, by id: up to six id-prefix matches (`LIKE`, with `\`
///    escaping `%`, `_` and itself), then name matches, or alias matches when no
///    name matched, each added only if its id is not pooled yet;
/// 4. one subject is the answer, none is [`SubjectResolution::NoMatch`], several
///    [`SubjectResolution::Ambiguous`].
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails, including a store without the
/// `subjects` or `subject_aliases` table (the reference fails there too).
pub fn resolve_subject(store: &Store, reference: &str) -> Result<SubjectResolution> {
    let reference = particles_pytext::strip(reference);
    if reference.is_empty() {
        return Ok(SubjectResolution::NoMatch);
    }
    let connection = store.connection();
    let exact: Option<String> = connection
        .query_row(
            "SELECT id FROM subjects WHERE id = ?1",
            [reference],
            |row| row.get(0),
        )
        .optional()
        .map_err(query_error("subject by id"))?;
    if let Some(id) = exact {
        return Ok(SubjectResolution::Found(id));
    }

    let mut pool: Vec<SubjectCandidate> = Vec::new();
    let prefix = format!("{}%", escape_like(reference));
    let rows =
        |sql: &'static str, param: &str, matched: MatchedBy| -> Result<Vec<SubjectCandidate>> {
            let mut statement = connection.prepare(sql).map_err(query_error(sql))?;
            let found = statement
                .query_map([param], |row| {
                    Ok(SubjectCandidate {
                        id: row.get(0)?,
                        canonical_name: row.get(1)?,
                        matched,
                    })
                })
                .map_err(query_error(sql))?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(query_error(sql));
            found
        };
    pool.extend(rows(
        "SELECT id, canonical_name FROM subjects WHERE id LIKE ?1 ESCAPE '\\' ORDER BY id LIMIT 6",
        &prefix,
        MatchedBy::IdPrefix,
    )?);
    // Python lowers the typed text (`str.lower()`, Python 3.11's Unicode); SQLite
    // lowers the stored name (ASCII only, in the SQL).
    let lowered = particles_pytext::lower(reference);
    let mut named = rows(
        "SELECT id, canonical_name FROM subjects WHERE lower(canonical_name) = ?1 \
         ORDER BY created_at, id",
        &lowered,
        MatchedBy::Name,
    )?;
    if named.is_empty() {
        named = rows(
            "SELECT subjects.id, subjects.canonical_name FROM subjects \
             JOIN subject_aliases ON subject_aliases.subject_id = subjects.id \
             WHERE subject_aliases.alias_key = ?1 ORDER BY subjects.created_at, subjects.id",
            &lowered,
            MatchedBy::Alias,
        )?;
    }
    for candidate in named {
        if !pool.iter().any(|pooled| pooled.id == candidate.id) {
            pool.push(candidate);
        }
    }
    Ok(match pool.len() {
        0 => SubjectResolution::NoMatch,
        1 => SubjectResolution::Found(pool.remove(0).id),
        n => SubjectResolution::Ambiguous {
            reference: reference.to_owned(),
            more: n > AMBIGUOUS_SHOWN,
            shown: pool.into_iter().take(AMBIGUOUS_SHOWN).collect(),
        },
    })
}

/// The reference's `escape_like_pattern`: `\` first, then `%` and `_`.
pub(crate) fn escape_like(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::*;

    fn store(subjects: &[(&str, &str, &str, &[&str])]) -> Store {
        let connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch(
                "CREATE TABLE particles (id TEXT PRIMARY KEY);
                 CREATE TABLE subjects (id VARCHAR PRIMARY KEY, canonical_name TEXT NOT NULL,
                     created_at DATETIME NOT NULL);
                 CREATE TABLE subject_aliases (subject_id VARCHAR NOT NULL, alias_key TEXT NOT NULL,
                     alias TEXT NOT NULL, PRIMARY KEY (subject_id, alias_key));",
            )
            .unwrap();
        for (id, name, created, aliases) in subjects {
            connection
                .execute(
                    "INSERT INTO subjects VALUES (?1, ?2, ?3)",
                    [id, name, created],
                )
                .unwrap();
            for alias in *aliases {
                connection
                    .execute(
                        "INSERT INTO subject_aliases VALUES (?1, ?2, ?3)",
                        [*id, particles_pytext::lower(alias).as_str(), alias],
                    )
                    .unwrap();
            }
        }
        Store::from_connection(connection, "memory".into()).unwrap()
    }

    fn resolve(store: &Store, reference: &str) -> SubjectResolution {
        resolve_subject(store, reference).unwrap()
    }

    #[test]
    fn exact_ids_prefixes_names_and_aliases() {
        let store = store(&[
            ("23bafd6c-0001", "Gold", "2024-01-02", &["Au"]),
            ("23bafd6c-0002", "Silver", "2024-01-01", &["Ag", "Argentum"]),
            ("7f00aa00-0003", "Émile Zola", "2024-01-03", &["Zola"]),
        ]);
        let found = |id: &str| SubjectResolution::Found(id.to_owned());
        assert_eq!(resolve(&store, "23bafd6c-0001"), found("23bafd6c-0001"));
        assert_eq!(
            resolve(&store, "  7F00 "),
            found("7f00aa00-0003"),
            "LIKE folds ASCII"
        );
        assert_eq!(resolve(&store, "gOLD"), found("23bafd6c-0001"));
        assert_eq!(resolve(&store, "argentum"), found("23bafd6c-0002"));
        assert_eq!(resolve(&store, "\u{1f}Ag\u{1c}"), found("23bafd6c-0002"));
        // SQLite keeps `É`, Python lowers it: the name never matches.
        assert_eq!(resolve(&store, "Émile Zola"), SubjectResolution::NoMatch);
        assert_eq!(resolve(&store, "zola"), found("7f00aa00-0003"));
        assert_eq!(resolve(&store, "   "), SubjectResolution::NoMatch);
        assert_eq!(
            resolve(&store, "23bafd6c_"),
            SubjectResolution::NoMatch,
            "_ is literal"
        );
        assert_eq!(
            resolve(&store, "%"),
            SubjectResolution::NoMatch,
            "% is literal"
        );
    }

    #[test]
    fn ambiguity_is_refused_with_the_references_message() {
        let store = store(&[
            ("cafe0001-x", "Beta", "2024-01-02", &[]),
            ("cafe0002-x", "Alpha", "2024-01-01", &[]),
            ("99990003-x", "cafe", "2024-01-01", &[]),
        ]);
        let resolution = resolve(&store, " cafe ");
        assert_eq!(
            resolution.refusal(" cafe ").unwrap(),
            "Subject 'cafe' is ambiguous: it matches cafe0001… Beta (by ID prefix); \
             cafe0002… Alpha (by ID prefix); 99990003… cafe (by name). \
             Pass more characters of the ID you mean."
        );
        assert_eq!(
            resolve(&store, "nothing").refusal("nothing'\"").unwrap(),
            "No subject matches 'nothing\\'\"' by ID, ID prefix, or name."
        );
    }

    #[test]
    fn more_than_five_are_elided() {
        let subjects: Vec<(String, String)> = (0..8)
            .map(|i| (format!("abc{i}-id"), format!("S{i}")))
            .collect();
        let rows: Vec<(&str, &str, &str, &[&str])> = subjects
            .iter()
            .map(|(id, name)| (id.as_str(), name.as_str(), "2024-01-01", &[][..]))
            .collect();
        let store = store(&rows);
        let SubjectResolution::Ambiguous { shown, more, .. } = resolve(&store, "abc") else {
            panic!("ambiguous")
        };
        assert_eq!(shown.len(), 5);
        assert!(more);
    }
}
