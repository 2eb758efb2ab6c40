from brainsmith.cli import main

main()
