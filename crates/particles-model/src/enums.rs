//! The closed vocabularies of the model, spelled as the reference stores them.

use std::{fmt, str::FromStr};

/// A text that is not one of an enumeration's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a valid {kind} (expected one of: {})", expected.join(", "))]
pub struct UnknownVariant {
    /// The enumeration's name, e.g. `status`.
    pub kind: &'static str,
    /// The text that was given.
    pub value: String,
    /// The accepted values.
    pub expected: &'static [&'static str],
}

macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident, $kind:literal, { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored text of this value.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl FromStr for $name {
            type Err = UnknownVariant;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                match text {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownVariant {
                        kind: $kind,
                        value: text.to_owned(),
                        expected: &[$($text),+],
                    }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

text_enum!(
    /// A particle's lifecycle status; only `ACTIVE` particles are query candidates.
    Status, "status", {
        /// Current belief.
        Active = "ACTIVE",
        /// Replaced by a newer particle.
        Superseded = "SUPERSEDED",
        /// Withdrawn.
        Retracted = "RETRACTED",
        /// Its provenance went stale.
        ProvenanceStale = "PROVENANCE_STALE",
        /// Awaiting review for inconsistency.
        Inconsistency = "INCONSISTENCY",
    }
);

text_enum!(
    /// Why a particle left the ACTIVE status.
    StatusReason, "status_reason", {
        /// A premise was retracted.
        RetractedDependency = "RETRACTED_DEPENDENCY",
        /// The corpus entry disappeared.
        CorpusEntryMissing = "CORPUS_ENTRY_MISSING",
        /// Trust was lowered.
        TrustDemoted = "TRUST_DEMOTED",
        /// A more trusted source won.
        LowerTrustSource = "LOWER_TRUST_SOURCE",
        /// Replaced by a re-index.
        SupersededByReindex = "SUPERSEDED_BY_REINDEX",
        /// The validity interval ended.
        ValidityExpired = "VALIDITY_EXPIRED",
        /// A conflict was resolved against it.
        ConflictResolved = "CONFLICT_RESOLVED",
        /// A conflict awaits resolution.
        ConflictPending = "CONFLICT_PENDING",
        /// Retracted explicitly.
        ExplicitRetraction = "EXPLICIT_RETRACTION",
        /// Its source was retracted.
        SourceRetracted = "SOURCE_RETRACTED",
        /// Superseded explicitly.
        ExplicitSupersession = "EXPLICIT_SUPERSESSION",
        /// Its document was superseded.
        DocumentSuperseded = "DOCUMENT_SUPERSEDED",
        /// Replaced by an update.
        SupersededByUpdate = "SUPERSEDED_BY_UPDATE",
        /// Replaced by a re-anchor.
        SupersededByReanchor = "SUPERSEDED_BY_REANCHOR",
        /// Merged into a duplicate.
        DuplicateMerged = "DUPLICATE_MERGED",
    }
);

text_enum!(
    /// Where a confidence value came from; `DERIVED` particles rest on premises.
    CalibrationSource, "calibration_source", {
        /// Straight from the extractor.
        ExtractorDirect = "EXTRACTOR_DIRECT",
        /// Asserted by an agent.
        AgentAsserted = "AGENT_ASSERTED",
        /// Calibrated on a benchmark.
        CalibratedBenchmark = "CALIBRATED_BENCHMARK",
        /// Reviewed by a person.
        HumanReview = "HUMAN_REVIEW",
        /// Derived from premise particles.
        Derived = "DERIVED",
        /// Imported from elsewhere.
        Imported = "IMPORTED",
    }
);

text_enum!(
    /// Whether uncertainty is reducible.
    UncertaintyNature, "uncertainty_nature", {
        /// Irreducible.
        Aleatory = "ALEATORY",
        /// Reducible with more knowledge.
        Epistemic = "EPISTEMIC",
    }
);

text_enum!(
    /// The kind of particle; narratives rank below claims of equal score.
    ParticleType, "particle_type", {
        /// A claim.
        Claim = "CLAIM",
        /// A review.
        Review = "REVIEW",
        /// A narrative (rank weight 0.6 by default).
        Narrative = "NARRATIVE",
        /// An action.
        Action = "ACTION",
        /// An annotation.
        Annotation = "ANNOTATION",
    }
);

text_enum!(
    /// How a claim can be adjudicated.
    AssertionModality, "assertion_modality", {
        /// Can be shown false.
        Falsifiable = "FALSIFIABLE",
        /// A judgement.
        Evaluative = "EVALUATIVE",
        /// A report of experience.
        Experiential = "EXPERIENTIAL",
        /// True by definition.
        Constitutive = "CONSTITUTIVE",
    }
);

text_enum!(
    /// Whether a validity interval describes an event or a state.
    ValidKind, "valid_kind", {
        /// A point event (no `valid_until`).
        Event = "EVENT",
        /// A state over an interval.
        State = "STATE",
    }
);

text_enum!(
    /// Whether the content is prose or a structured claim.
    CanonicalForm, "canonical_form", {
        /// Prose.
        Prose = "PROSE",
        /// Structured (requires a structured claim).
        Structured = "STRUCTURED",
    }
);

text_enum!(
    /// What a provenance reference points at.
    ProvenanceRefType, "provenance ref type", {
        /// A corpus entry (and snapshot).
        Source = "SOURCE",
        /// A premise particle; its id is in `corpus_entry_id`.
        Particle = "PARTICLE",
        /// An agent.
        Agent = "AGENT",
    }
);

text_enum!(
    /// The kind of a structured-claim term.
    TermKind, "term kind", {
        /// An IRI or CURIE.
        Uri = "URI",
        /// An unresolved lexical name.
        Token = "TOKEN",
        /// A literal (object position only).
        Literal = "LITERAL",
    }
);

#[cfg(test)]
mod tests {
    use super::ParticleType;

    #[test]
    fn an_unknown_value_names_the_accepted_ones() {
        let error = "NOT_A_TYPE".parse::<ParticleType>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "\"NOT_A_TYPE\" is not a valid particle_type \
             (expected one of: CLAIM, REVIEW, NARRATIVE, ACTION, ANNOTATION)"
        );
    }
}
