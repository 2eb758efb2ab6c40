"""What a build takes in, checked before anything runs: the model and its vectors
(``model``), the wiring of a graph (``wiring``), the inputs a finished build runs
(``inputs``), the gate every build folder from elsewhere passes (``gate``) and what the
commands that read a finished build folder share (``build_folder``)."""
