"""brainsmith's hardware kernels: FINN kernels, each mapped to the transform that infers it."""
