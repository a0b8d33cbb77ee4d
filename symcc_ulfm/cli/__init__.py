"""The command line (DESIGN.md §12): ``args`` declares every subcommand and option, ``main`` runs
them and is the only place where exceptions become exit codes."""
