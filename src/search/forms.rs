//! Short forms a search takes for their long ones (`db` for `database`, `k8s` for
//! `kubernetes`) and the long ones for them: a model asks in the words it would use,
//! which are seldom the user's. The groups are data (`short_forms.txt`, built in), and
//! a user adds groups of the same shape at run time ([`add`]).

use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

/// The built-in groups.
const BUILT_IN: &str = include_str!("short_forms.txt");

/// Each word of a group, lower case, to every other word of its group.
type Table = HashMap<String, Vec<String>>;

fn table() -> &'static RwLock<Table> {
    static TABLE: OnceLock<RwLock<Table>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Table::new();
        // The built-in file is checked by this module's tests: a malformed line is a bug.
        let _ = parse_into(BUILT_IN, &mut t);
        RwLock::new(t)
    })
}

/// The groups of `text` into `t`: one a line, `short, forms = long, forms`; blank lines
/// and `#` comments skipped. How many groups it took, or the first line it could not
/// read.
fn parse_into(text: &str, t: &mut Table) -> Result<usize, String> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((short, long)) = line.split_once('=') else {
            return Err(format!(
                "line {}: expected `short, forms = long, forms`, got {line:?}",
                n + 1
            ));
        };
        let words = |side: &str| -> Vec<String> {
            side.split(',')
                .map(|w| w.trim().to_lowercase())
                .filter(|w| !w.is_empty())
                .collect()
        };
        let (short, long) = (words(short), words(long));
        if short.is_empty()
            || long.is_empty()
            || short
                .iter()
                .chain(&long)
                .any(|w| w.contains(char::is_whitespace))
        {
            return Err(format!(
                "line {}: each side needs one or more single words, comma-separated, got {line:?}",
                n + 1
            ));
        }
        groups.push(short.into_iter().chain(long).collect());
    }
    for group in &groups {
        for w in group {
            let others = t.entry(w.clone()).or_default();
            for o in group.iter().filter(|o| *o != w) {
                if !others.contains(o) {
                    others.push(o.clone());
                }
            }
        }
    }
    Ok(groups.len())
}

/// Add the groups of `text` (the shape of `short_forms.txt`) to every later search;
/// how many it took. Nothing is added when a line cannot be read.
pub fn add(text: &str) -> Result<usize, String> {
    let mut staged = Table::new();
    let n = parse_into(text, &mut staged)?;
    let mut t = table().write().unwrap_or_else(|e| e.into_inner());
    for (w, others) in staged {
        let entry = t.entry(w).or_default();
        for o in others {
            if !entry.contains(&o) {
                entry.push(o);
            }
        }
    }
    Ok(n)
}

/// The other forms of `word` (lower case), if it has any.
pub fn others(word: &str) -> Vec<String> {
    let t = table().read().unwrap_or_else(|e| e.into_inner());
    t.get(word).cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_groups_read_and_go_both_ways() {
        let mut t = Table::new();
        assert!(parse_into(BUILT_IN, &mut t).is_ok_and(|n| n > 30));
        assert!(others("db").contains(&"database".to_owned()));
        assert!(others("database").contains(&"db".to_owned()));
        assert!(others("k8s").contains(&"kubernetes".to_owned()));
        assert!(others("nothing").is_empty());
    }

    #[test]
    fn groups_a_user_adds_are_searched_and_bad_lines_are_named() {
        assert_eq!(add("# ours\nqa = quality\n\nsre = reliability\n"), Ok(2));
        assert_eq!(others("qa"), ["quality"]);
        assert_eq!(others("reliability"), ["sre"]);
        let bad = add("ok = fine\nno equals sign here\n");
        assert_eq!(
            bad,
            Err(
                "line 2: expected `short, forms = long, forms`, got \"no equals sign here\""
                    .to_owned()
            )
        );
        assert!(
            others("ok").is_empty(),
            "nothing is added from a file with a bad line"
        );
        assert!(add("a b = c").is_err());
    }
}
