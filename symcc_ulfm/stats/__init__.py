"""Pure statistics for the scaling and comparison studies (DESIGN.md §10): no file system, no
clocks, no randomness.

- :mod:`.intervals`: normal CI of a mean, Student-t paired CI of a relative change, Wilson interval.
- :mod:`.usl`: Universal Scalability Law fit and its doubling threshold.
- :mod:`.saturation`: coverage saturation fit and its doubling threshold.
- :mod:`.ceiling`: the recommended worker ceiling from those thresholds and the core count.
- :mod:`.effect`: Mann-Whitney U and Vargha-Delaney A12 of times to first finding between tiers.
- :mod:`.fuzzbench`: a comparison study's FuzzBench statistics (medians and IQR, U and A12 against a
  reference, bands over time, ranks, Friedman and the Nemenyi critical difference, Kaplan-Meier).

Bad arguments raise :class:`.common.StatsInputError` (a ``ConfigError``, exit 2). Data that a
model cannot honestly describe is not an error: the model returns a result whose ``refused``
field holds the recorded reason, e.g. ``coverage_fit_error=invalid coverage observation``.
"""
