"""The exploration's report.html: the page (``page``), its tables (``tables``) and its Pareto
plots (``plots``)."""

from brainsmith.dse.report.page import metric_text, write_report

__all__ = ["metric_text", "write_report"]
