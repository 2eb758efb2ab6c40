"""brainsmith's HLS and RTL backends of its kernels, built on FINN's implementations."""
