"""Discovery sources. Each yields plugin specs without importing the plugins' modules
(except entry points, which stevedore loads): brainsmith's own packages, user folders,
pip-installed packages, and the QONNX and FINN adapters."""
