//! The digest's Markdown (the reference core's `render/markdown.py`
//! `render_digest_located`): pure, one line per belief, with each belief line's
//! start counted in code points.

use particles_model::{response::ObserverScopeNote, Timestamp};

/// One belief line's data.
#[derive(Debug, Clone, PartialEq)]
pub struct DigestEntry<'a> {
    /// The claim, verbatim (not escaped, flattened or cut).
    pub content: &'a str,
    /// The effective confidence shown (never the lifted rank score).
    pub effective_confidence: f64,
    /// Its subjects' canonical names, in the belief's order.
    pub subjects: Vec<&'a str>,
    /// When it was asserted (its date is shown).
    pub asserted_at: Timestamp,
    /// The open INCONSISTENCY record naming it.
    pub contested: Option<&'a str>,
    /// The contested badge's bases.
    pub contested_bases: &'a [String],
}

/// The digest text of `store` and the code-point offset of each entry's line.
/// `total_active` counts the ACTIVE beliefs in view (of which `entries` are the
/// top); the refused and spend lines close the text when given.
pub fn render_digest(
    store: &str,
    entries: &[DigestEntry<'_>],
    total_active: u64,
    observer: Option<&ObserverScopeNote>,
    spend_line: Option<&str>,
    refused_line: Option<&str>,
) -> (String, Vec<u64>) {
    let mut lines: Vec<String> = vec![format!("# Memory digest — {store}"), String::new()];
    if let Some(note) = observer {
        lines.push(observer_scope_line(note));
        lines.push(String::new());
    }
    let mut rows = Vec::with_capacity(entries.len());
    if entries.is_empty() {
        let place = match observer {
            Some(note) if note.engaged => {
                format!("in view for project `{}` in `{store}`", note.project)
            }
            _ => format!("in `{store}`"),
        };
        lines.push(format!("_No ACTIVE beliefs {place}._"));
    } else {
        let shown = entries.len() as u64;
        lines.push(format!(
            "_{shown} of {total_active} ACTIVE belief(s), ranked by effective confidence._"
        ));
        lines.push(String::new());
        for entry in entries {
            rows.push(lines.len());
            lines.push(entry_line(entry));
        }
        if shown < total_active {
            lines.push(String::new());
            lines.push(format!(
                "_Showing the top {shown} of {total_active} by effective confidence; {} not shown._",
                total_active - shown
            ));
        }
    }
    for closing in [refused_line, spend_line].into_iter().flatten() {
        lines.push(String::new());
        lines.push(format!("_{closing}_"));
    }
    let mut starts = Vec::with_capacity(lines.len());
    let mut at = 0u64;
    for line in &lines {
        starts.push(at);
        at += line.chars().count() as u64 + 1;
    }
    let offsets = rows.iter().map(|&row| starts[row]).collect();
    let mut markdown = lines.join("\n");
    markdown.push('\n');
    (markdown, offsets)
}

fn entry_line(entry: &DigestEntry<'_>) -> String {
    let subjects = if entry.subjects.is_empty() {
        String::new()
    } else {
        format!(" _({})_", entry.subjects.join(", "))
    };
    let contested = match (entry.contested_bases.is_empty(), entry.contested) {
        (false, by) => {
            let mut text = format!(" · contested ({})", entry.contested_bases.join(", "));
            if let Some(id) = by {
                text.push_str(&format!(" by `{id}`"));
            }
            text
        }
        (true, Some(id)) => format!(" · contested by `{id}`"),
        (true, None) => String::new(),
    };
    format!(
        "- **{}** {}{} · {}{}",
        fixed(entry.effective_confidence, 2),
        entry.content,
        subjects,
        entry.asserted_at.date_text(),
        contested
    )
}

/// Python's `format(value, ".Nf")`: correctly rounded (as Rust's), `nan` and
/// `inf` spelled as Python spells them.
pub(crate) fn fixed(value: f64, digits: usize) -> String {
    if value.is_nan() {
        "nan".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "inf" } else { "-inf" }.to_owned()
    } else {
        format!("{value:.digits$}")
    }
}

/// The observer's one line (the reference core's `observer_scope_line`).
fn observer_scope_line(note: &ObserverScopeNote) -> String {
    if !note.engaged {
        return format!(
            "_Project observer `{}` not applied: this store has not been rescoped yet \
             (`particles memory rescope`), so this is the whole store._",
            note.project
        );
    }
    let mut line = format!(
        "_Observer: project `{}` — {} of {} ACTIVE belief(s) in scope (global, or observed in \
         this project)",
        note.project, note.in_scope, note.total
    );
    if note.unattributed > 0 {
        line.push_str(&format!("; {} unattributed", note.unattributed));
    }
    if note.lapsed > 0 {
        line.push_str(&format!(
            "; {} lapsed (no source states them any more)",
            note.lapsed
        ));
    }
    if let Some(attribution) = &note.attribution {
        line.push_str(". ");
        line.push_str(attribution.trim_end_matches('.'));
    }
    line.push_str("._");
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(content: &'a str, bases: &'a [String]) -> DigestEntry<'a> {
        DigestEntry {
            content,
            effective_confidence: 0.905,
            subjects: vec!["s", "s"],
            asserted_at: Timestamp::parse("2020-02-12 10:00:00.000001").expect("an instant"),
            contested: Some("x"),
            contested_bases: bases,
        }
    }

    #[test]
    fn lines_start_where_their_offsets_say_in_code_points() {
        let bases = vec!["divergence".to_owned()];
        let entries = [entry("élan", &[]), entry("two\nlines", &bases)];
        let (markdown, offsets) = render_digest("default", &entries, 5, None, Some("spent"), None);
        let chars: Vec<char> = markdown.chars().collect();
        for offset in &offsets {
            assert_eq!(chars[*offset as usize], '-');
        }
        assert!(markdown.starts_with("# Memory digest — default\n\n_2 of 5 ACTIVE belief(s)"));
        assert!(markdown.contains("- **0.91** élan _(s, s)_ · 2020-02-12 · contested by `x`\n"));
        assert!(markdown.contains(" · contested (divergence) by `x`\n"));
        assert!(markdown.ends_with("3 not shown._\n\n_spent_\n"));
    }

    #[test]
    fn an_empty_digest_says_where_it_looked() {
        let (markdown, offsets) = render_digest("default", &[], 0, None, None, None);
        assert_eq!(
            markdown,
            "# Memory digest — default\n\n_No ACTIVE beliefs in `default`._\n"
        );
        assert!(offsets.is_empty());
    }
}
