"""What a build takes in, checked before anything runs: the model and its vectors
(``model``), the wiring of a graph (``wiring``), the inputs a finished build runs
(``inputs``) and the gate every build folder from elsewhere passes (``gate``)."""
