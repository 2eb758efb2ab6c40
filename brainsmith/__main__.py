import os
import sys

# ``python -m brainsmith`` puts the working folder first on sys.path: run inside a build
# folder or a download, its Python files would shadow the installed modules brainsmith, QONNX
# and FINN import. Modules come only from the installed packages (and PYTHONPATH).
if sys.path and not sys.flags.safe_path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from brainsmith.cli import main

main()
