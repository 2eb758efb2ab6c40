"""brainsmith's own graph transforms; one plugin per module, found by the hub without importing."""
