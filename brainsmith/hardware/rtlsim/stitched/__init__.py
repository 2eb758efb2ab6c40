"""The stitched partition: every layer, with its width converters and FIFOs, as one design
(``design.py``), simulated whole (``partition.py``), its report.json section typed in
``brainsmith.report_schema.stitched``."""
