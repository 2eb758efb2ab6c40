"""Design-space exploration: ``brainsmith.explore(model, blueprint, output_dir)`` builds every
variant of a blueprint's ``design_space:``, running steps that variants share once
(execution tree, ``tree``), on Dask (``executor``), and ranks the results. See docs/explore.md.
"""

from __future__ import annotations

from brainsmith.dse.exploration import ExploreError, ExploreResult, explore

__all__ = ["ExploreError", "ExploreResult", "explore"]
