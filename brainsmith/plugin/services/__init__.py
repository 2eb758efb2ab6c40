"""What the plugin manager serves beside lookup, each imported on first use: filtered views
of the registry (``views``), watching plugin folders (``watch``), the weak instance cache
(``instances``), and the hub's health and stats (``health``, typed by ``records``)."""
