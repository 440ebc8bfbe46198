from rladapt.cli import main

main()
