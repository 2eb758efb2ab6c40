"""Integration with the compiler frameworks brainsmith hosts (QONNX, FINN)."""
