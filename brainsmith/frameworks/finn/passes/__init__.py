"""QONNX and FINN graph passes brainsmith runs or installs: readable tensor names in one pass
and the clean-up, shape and datatype inference in linear time (installed when FINN is
prepared), the flatten before fully connected heads absorbed into their weights, and
thresholds rounded half to even as the QONNX quantizers round."""
