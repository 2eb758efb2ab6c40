"""brainsmith's build steps (``@step`` plugins), found by module scanning; use them as
``steps.cleanup`` or by name in a blueprint. Import-free on purpose: FINN loads only
when a step module is imported."""
