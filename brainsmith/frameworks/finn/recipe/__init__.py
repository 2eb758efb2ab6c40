"""FINN's step bodies as brainsmith runs them (``steps``) and its recipe for residual,
convolutional and joining networks (``networks``)."""
