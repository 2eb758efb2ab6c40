"""FINN's estimates of a build, per layer and typed: what its estimate reports say
(``finn_reports``), what the graph says of each layer (``layer_facts``), what FINN has no
estimate for (``coverage``), the layers and totals with brainsmith's estimates where FINN has
none (``estimates``), and the nodes left on the host (``host``). The records are
``records``' TypedDicts, written to report.json as they are."""
