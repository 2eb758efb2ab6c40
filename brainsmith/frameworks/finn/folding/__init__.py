"""The folding search (``search``: per matrix layer the SIMD, PE and weight memory that meet
the target at the least estimated cost), its typed record (``record``: the search or FINN's
SetFolding run, the record handed to the build and written to ``folding.json``) and
``target_fps`` to a folding (``target``)."""
