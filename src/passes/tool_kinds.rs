//! What a tool is, by its name: the read, search, list, shell and fetch tools whose old
//! results the passes clear by default, and the write and edit tools an idle gap clears
//! with them, across common agents. The names are data (`tool_kinds.txt`, built in), and
//! a user adds lines of the same shape at run time ([`add`]); the defaults made after
//! that take them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{OnceLock, RwLock};

/// The tool names built in.
const BUILT_IN: &str = include_str!("tool_kinds.txt");

/// The kinds a tool may be.
pub const KINDS: [&str; 7] = ["read", "search", "list", "shell", "fetch", "write", "edit"];

/// The kinds whose old results clearing takes by default.
pub const CLEARED: [&str; 5] = ["read", "search", "list", "shell", "fetch"];

/// The kinds an idle gap clears by default.
pub const CLEARED_AFTER_GAP: [&str; 6] = ["read", "search", "shell", "fetch", "write", "edit"];

type Table = BTreeMap<&'static str, BTreeSet<String>>;

fn table() -> &'static RwLock<Table> {
    static TABLE: OnceLock<RwLock<Table>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Table::new();
        // The built-in file is checked by this module's tests: a malformed line is a bug.
        let _ = parse_into(BUILT_IN, &mut t);
        RwLock::new(t)
    })
}

/// The lines of `text` into `t`; how many it took, or the first line it could not read.
fn parse_into(text: &str, t: &mut Table) -> Result<usize, String> {
    let mut lines = 0;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parsed = line.split_once(':').and_then(|(kind, names)| {
            let kind = KINDS.iter().find(|k| **k == kind.trim())?;
            Some((*kind, names))
        });
        let Some((kind, names)) = parsed else {
            return Err(format!(
                "line {}: expected `kind: tool, tool` with kind one of {}; got {line:?}",
                n + 1,
                KINDS.join(", ")
            ));
        };
        let names: Vec<String> = names
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        if names.is_empty() {
            return Err(format!("line {}: no tool after the kind: {line:?}", n + 1));
        }
        t.entry(kind).or_default().extend(names);
        lines += 1;
    }
    Ok(lines)
}

/// Add lines (the shape of `tool_kinds.txt`) for every default made later; how many
/// lines were taken. Nothing is added when a line cannot be read.
pub fn add(text: &str) -> Result<usize, String> {
    let mut staged = Table::new();
    let n = parse_into(text, &mut staged)?;
    let mut t = table().write().unwrap_or_else(|e| e.into_inner());
    for (kind, names) in staged {
        t.entry(kind).or_default().extend(names);
    }
    Ok(n)
}

/// The names of the tools of `kinds`.
pub fn tools_of(kinds: &[&str]) -> BTreeSet<String> {
    let t = table().read().unwrap_or_else(|e| e.into_inner());
    kinds
        .iter()
        .filter_map(|k| t.get(k))
        .flat_map(|names| names.iter().cloned())
        .collect()
}

/// What a tool is, by its name (its first kind), if it is known.
pub fn kind_of(tool: &str) -> Option<&'static str> {
    let t = table().read().unwrap_or_else(|e| e.into_inner());
    KINDS
        .iter()
        .find(|k| t.get(*k).is_some_and(|names| names.contains(tool)))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_file_reads_whole() {
        let mut t = Table::new();
        assert_eq!(parse_into(BUILT_IN, &mut t), Ok(7));
        assert!(KINDS.iter().all(|k| t.contains_key(k)));
    }

    #[test]
    fn each_agents_reading_and_shell_tools_are_cleared_and_its_edits_are_not() {
        let cleared = tools_of(&CLEARED);
        for tool in [
            "read_file",
            "Read",
            "Bash",
            "Grep",
            "Glob",
            "shell",
            "execute_bash",
        ] {
            assert!(cleared.contains(tool), "{tool}");
        }
        for tool in ["edit_file", "Edit", "write_file", "apply_patch", "task"] {
            assert!(!cleared.contains(tool), "{tool}");
        }
        assert!(tools_of(&CLEARED_AFTER_GAP).contains("Edit"));
        assert_eq!(kind_of("Bash"), Some("shell"));
        assert_eq!(kind_of("bash_it"), None);
    }

    #[test]
    fn a_user_adds_tools_to_a_kind_and_a_bad_line_adds_nothing() {
        assert_eq!(
            add("read: fetch_page_x1\n# a comment\nshell: run_it_x1"),
            Ok(2)
        );
        assert!(tools_of(&CLEARED).contains("fetch_page_x1"));
        assert_eq!(kind_of("run_it_x1"), Some("shell"));
        let err = add("read: only_if_valid_x1\nparse: nothing").unwrap_err();
        assert!(
            err.starts_with("line 2: expected `kind: tool, tool`"),
            "{err}"
        );
        assert!(!tools_of(&KINDS).contains("only_if_valid_x1"));
        assert!(add("read:").unwrap_err().contains("no tool after the kind"));
    }
}
