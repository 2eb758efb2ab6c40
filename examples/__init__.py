"""Example models for brainsmith and the script that makes them."""
