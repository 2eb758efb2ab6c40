"""The property tests' settings: ``BRAINSMITH_FUZZ_EXAMPLES`` cases each (``make fuzz`` runs
10,000), no deadline per case, fixtures of the test's own scope allowed."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings


def fuzz_settings(default_examples: int = 200) -> settings:
    """Hypothesis settings for ``BRAINSMITH_FUZZ_EXAMPLES`` cases (``default_examples``
    when it is not set)."""
    return settings(
        max_examples=int(os.environ.get("BRAINSMITH_FUZZ_EXAMPLES", str(default_examples))),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
