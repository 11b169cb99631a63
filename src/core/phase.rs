//! The phases that remove a row, each once: its number (as the archive,
//! `dedup_why` and the reports store it), its name in a report, and the
//! reason a removal of it carries where that reason is fixed.
//!
//! A phase's number is what the SQL scripts of `sql/` write and compare
//! (`dedup_phase IN (4, 5)`); the test below reads every such literal in
//! `sql/` and in the bindings and holds it to this enum, so a new phase is
//! one variant here and its script.
//!
//! Cost: constants; [`Phase::from_number`] a scan of five.
//!
//! Reference: the reference pipeline's removal steps
//! (`Deduplicator.run_on_db`), in its order.

/// A phase of the run that removes rows, in the order the run takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// 1: a URL the run ignores or cannot parse (the reason says which).
    Unusable = 1,
    /// 2: the same canonical URL as a survivor.
    SameUrl = 2,
    /// 3: the same content hash as a survivor.
    SameContent = 3,
    /// 4: a near duplicate of a survivor (`lev_ratio` above the threshold).
    Near = 4,
    /// 5: a domain with fewer surviving pages than `n_min`.
    SmallDomain = 5,
}

impl Phase {
    /// Every phase, in the run's order.
    pub const ALL: [Phase; 5] = [
        Phase::Unusable,
        Phase::SameUrl,
        Phase::SameContent,
        Phase::Near,
        Phase::SmallDomain,
    ];

    /// The phases whose removals keep their slot in the window's scan
    /// order (an incremental run holds a placeholder for each).
    pub const KEEP_SLOT: [Phase; 2] = [Phase::Near, Phase::SmallDomain];

    /// The phases whose removals name a survivor.
    pub const WITH_SURVIVOR: [Phase; 3] = [Phase::SameUrl, Phase::SameContent, Phase::Near];

    /// Its number, as stored.
    pub fn number(self) -> i64 {
        self as i64
    }

    /// The phase of a stored number; `None` for a number no phase has.
    pub fn from_number(n: i64) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.number() == n)
    }

    /// Its name in a report.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Unusable => "URL ignored/unparseable",
            Phase::SameUrl => "same canonical URL",
            Phase::SameContent => "same content hash",
            Phase::Near => "near duplicate",
            Phase::SmallDomain => "small domain",
        }
    }

    /// The reason each removal of it carries, where it is fixed (phases 1
    /// and 5 say which URL rule or which domain).
    pub fn reason(self) -> Option<&'static str> {
        match self {
            Phase::SameUrl => Some("same canonical URL"),
            Phase::SameContent => Some("same content hash"),
            // ("resemblance above threshold" under measure = 'resemblance'.)
            Phase::Near => Some("near duplicate: lev_ratio above threshold"),
            Phase::Unusable | Phase::SmallDomain => None,
        }
    }

    /// `phases` as an SQL list: `(4, 5)`.
    pub fn sql_list(phases: &[Phase]) -> String {
        let numbers: Vec<String> = phases.iter().map(|p| p.number().to_string()).collect();
        format!("({})", numbers.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::Phase;
    use std::path::Path;

    #[test]
    fn numbers_round_trip_and_are_the_runs_order() {
        for (i, p) in Phase::ALL.iter().enumerate() {
            assert_eq!(p.number(), i as i64 + 1);
            assert_eq!(Phase::from_number(p.number()), Some(*p));
        }
        assert_eq!(Phase::from_number(0), None);
        assert_eq!(Phase::from_number(6), None);
        assert_eq!(Phase::sql_list(&Phase::KEEP_SLOT), "(4, 5)");
    }

    /// Every file under `dir` whose name ends in one of `exts`.
    fn files(dir: &Path, exts: &[&str], out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, exts, out);
            } else if exts
                .iter()
                .any(|e| path.extension().is_some_and(|x| x == *e))
            {
                out.push(path);
            }
        }
    }

    /// The phase literals of `text`: each `phase IN (a, b)`, `phase = n`
    /// and `n AS phase`, with the numbers it names.
    fn literals(text: &str) -> Vec<(String, Vec<i64>)> {
        let mut found = Vec::new();
        let lower = text.to_lowercase();
        let bytes = lower.as_bytes();
        let mut at = 0;
        while let Some(i) = lower[at..].find("phase") {
            let start = at + i;
            let end = start + "phase".len();
            at = end;
            // `phase IN (4, 5)` / `phase = 3` after the word.
            let after = lower[end..].trim_start();
            let numbers_after = if let Some(list) = after.strip_prefix("in (") {
                list.split(')').next().map(|l| {
                    l.split(',')
                        .map(|n| n.trim().parse::<i64>().ok())
                        .collect::<Option<Vec<i64>>>()
                })
            } else if let Some(n) = after.strip_prefix('=').or(after.strip_prefix("==")) {
                let n = n.trim_start();
                let digits: String = n.chars().take_while(|c| c.is_ascii_digit()).collect();
                (!digits.is_empty()).then(|| Some(vec![digits.parse().unwrap()]))
            } else {
                None
            };
            if let Some(Some(numbers)) = numbers_after {
                found.push((
                    lower[start..(end + 12).min(lower.len())].to_string(),
                    numbers,
                ));
            }
            // `4 AS phase` before the word.
            let before = lower[..start].trim_end();
            if let Some(b) = before.strip_suffix(" as") {
                let b = b.trim_end();
                let digits: String = b
                    .chars()
                    .rev()
                    .take_while(|c| c.is_ascii_digit())
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                let boundary = b.len() - digits.len();
                if !digits.is_empty()
                    && (boundary == 0 || !bytes[boundary - 1].is_ascii_alphanumeric())
                {
                    found.push((format!("{digits} as phase"), vec![digits.parse().unwrap()]));
                }
            }
        }
        found
    }

    #[test]
    fn every_phase_literal_in_the_scripts_and_bindings_is_a_phase() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut paths = Vec::new();
        files(&root.join("sql"), &["sql"], &mut paths);
        files(&root.join("src/sqlite"), &["rs"], &mut paths);
        let mut seen = 0;
        for path in &paths {
            let text = std::fs::read_to_string(path).unwrap();
            for (literal, numbers) in literals(&text) {
                seen += 1;
                for n in numbers {
                    assert!(
                        Phase::from_number(n).is_some(),
                        "{}: {literal:?} names phase {n}, which Phase does not have",
                        path.display()
                    );
                }
            }
        }
        assert!(
            seen >= 5,
            "the scan found {seen} literals: it reads nothing"
        );
    }

    #[test]
    fn the_plan_script_writes_each_phase_with_its_reason() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let script = std::fs::read_to_string(root.join("sql/06_removals.sql")).unwrap();
        // Each branch of the plan's union: `SELECT <rowid>, <phase>, <reason>`.
        let mut written = Vec::new();
        let lines: Vec<&str> = script.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(rest) = line.strip_prefix("SELECT ") else {
                continue;
            };
            let mut fields: Vec<&str> = rest.splitn(3, ',').map(str::trim).collect();
            if fields.len() < 3 {
                continue;
            }
            if fields[2].is_empty() {
                // (The reason on the next line.)
                fields[2] = lines.get(i + 1).copied().unwrap_or("");
            }
            let number = fields[1].trim_end_matches(" AS phase");
            let Ok(n) = number.parse::<i64>() else {
                continue;
            };
            let phase = Phase::from_number(n).expect("a phase the enum has");
            if let Some(reason) = phase.reason() {
                // (Phase 4 names its measure: the reason's words under
                // Levenshtein, in the branch's first lines.)
                let branch = lines[i + 1..(i + 5).min(lines.len())].join(" ");
                let written = format!("{} {branch}", fields[2]);
                let measured = phase == Phase::Near
                    && written.starts_with("'near duplicate: '")
                    && written.contains("ELSE 'lev_ratio' END || ' above threshold'");
                assert!(
                    written.starts_with(&format!("'{reason}'")) || measured,
                    "phase {n} is written with {written:?}, not its reason {reason:?}",
                );
            }
            written.push(phase);
        }
        written.sort();
        assert_eq!(written, Phase::ALL.to_vec(), "one branch a phase");
    }

    #[test]
    fn the_scan_reads_each_form() {
        let text =
            "WHERE d.dedup_phase IN (4, 5) AND x.phase = 3; SELECT 1 AS phase, r.phase AS phase";
        let found: Vec<Vec<i64>> = literals(text).into_iter().map(|(_, n)| n).collect();
        assert_eq!(found, vec![vec![4, 5], vec![3], vec![1]]);
        assert_eq!(literals("dedup_phase IN (7)")[0].1, vec![7]);
    }
}
