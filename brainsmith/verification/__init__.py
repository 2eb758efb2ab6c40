"""Verification: running a model on sample inputs and comparing its outputs with the reference's."""
