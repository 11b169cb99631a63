"""The phases that remove a row, for the Python layers that write or name
them without the extension at hand (Spark's driver, the reports): the
extension's `Phase` (src/core/phase.rs) as `dedup_phases()` gives it. A
test holds the two equal, so a new phase is a variant there and a row here.
"""

#: number -> (name in a report, the reason each removal carries or None)
PHASES = {
    1: ("URL ignored/unparseable", None),
    2: ("same canonical URL", "same canonical URL"),
    3: ("same content hash", "same content hash"),
    4: ("near duplicate", "near duplicate: lev_ratio above threshold"),
    5: ("small domain", None),
}

UNUSABLE, SAME_URL, SAME_CONTENT, NEAR, SMALL_DOMAIN = 1, 2, 3, 4, 5


def name(phase):
    """The phase's name in a report."""
    return PHASES.get(phase, ("unknown phase", None))[0]


def reason(phase):
    """The reason each removal of `phase` carries (None: each says its own)."""
    return PHASES[phase][1]


def near_reason(measure):
    """Phase 4's reason under the setting `measure` (sql/06_removals.sql)."""
    return "near duplicate: resemblance above threshold" if measure == "resemblance" else reason(NEAR)
