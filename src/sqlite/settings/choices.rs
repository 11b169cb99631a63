//! The settings that are closed choices, each an enum with its words (as the
//! user writes them, and as `dedup_runs.settings` and the phases' SQL read
//! them) and its default, once.

/// Declares a closed choice: its variants with their words, the default.
macro_rules! choice {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $word:literal),+ $(,)? } default $default:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every word, in the order declared.
            pub const WORDS: &'static [&'static str] = &[$($word),+];

            /// The word of this choice.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word),+
                }
            }

            /// The choice a word names, if any.
            pub fn from_word(word: &str) -> Option<Self> {
                match word {
                    $($word => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name::$default
            }
        }
    };
}

choice! {
    /// `near_mode`: how phase 4 finds candidate pairs.
    NearMode {
        /// The reference's window over URL order.
        Window = "window",
        /// MinHash LSH over the whole table.
        Lsh = "lsh",
    } default Window
}

choice! {
    /// `lsh_sketch`: how lsh mode's signature is made.
    LshSketch {
        /// Classic MinHash: one hash a shingle per permutation (`minhash`).
        Minhash = "minhash",
        /// One-permutation MinHash with optimal densification: one hash a
        /// shingle (`minhash_oph`).
        Oph = "oph",
    } default Minhash
}

impl LshSketch {
    /// The SQL function that makes this signature.
    pub fn function(self) -> &'static str {
        match self {
            LshSketch::Minhash => "minhash",
            LshSketch::Oph => "minhash_oph",
        }
    }
}

choice! {
    /// `boilerplate`: what the near-duplicate phase does with segments a
    /// domain repeats.
    Boilerplate {
        /// Compares the texts whole (the reference).
        Keep = "keep",
        /// Leaves the repeated segments out of the texts it compares.
        Strip = "strip",
    } default Keep
}

choice! {
    /// `action`: what a run does with the rows it finds duplicates.
    Action {
        /// Deletes them, archived for `dedup_restore()` (the pipeline).
        Delete = "delete",
        /// Deletes nothing: every row labelled with its cluster in
        /// `dedup_clusters`.
        Label = "label",
    } default Delete
}

choice! {
    /// `measure`: what the near-duplicate phase measures a pair by.
    MeasureKind {
        /// `lev_ratio`, the reference's.
        Levenshtein = "levenshtein",
        /// Broder's resemblance of word shingles, Text::DeDuper's.
        Resemblance = "resemblance",
    } default Levenshtein
}

choice! {
    /// `paragraphs`: what a run does with a paragraph a kept page shares
    /// with a page before it in the election order.
    Paragraphs {
        /// Leaves the texts of kept pages as they are.
        Keep = "keep",
        /// Cuts the later pages' copies (archived for `dedup_restore()`).
        Dedup = "dedup",
    } default Keep
}

choice! {
    /// `compat`: the project's behaviour or the reference's.
    Compat {
        /// The project's defaults.
        None = "none",
        /// The reference pipeline's behaviour exactly.
        Reference = "reference",
    } default None
}

/// `lsh_election`: how lsh mode elects among its candidate pairs: the
/// scan's own choice ([`crate::core::pair_scan::Election`]: `chain`, the
/// window scan's election, the reference's; `direct`, rows best first, each
/// still kept removing those near it), whose default as a setting is here.
pub use crate::core::pair_scan::Election as LshElection;

// (Derivable in core, but the setting's default belongs with the settings.)
#[allow(clippy::derivable_impls)]
impl Default for LshElection {
    fn default() -> Self {
        LshElection::Direct
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_word_names_its_choice_and_back() {
        for w in NearMode::WORDS {
            assert_eq!(NearMode::from_word(w).unwrap().as_str(), *w);
        }
        assert_eq!(Compat::from_word("ref"), None);
        assert_eq!(
            (
                NearMode::default(),
                Boilerplate::default(),
                Compat::default(),
                LshElection::default()
            ),
            (
                NearMode::Window,
                Boilerplate::Keep,
                Compat::None,
                LshElection::Direct
            )
        );
    }
}
