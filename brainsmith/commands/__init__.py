"""The commands beside the build: ``brainsmith check``, ``verify-rtl``, ``synth``,
``place-route`` and ``bitstream``, ``flash``, ``run``. No module here imports another: what
they share is ``brainsmith.intake.build_folder``."""
