"""The subcommands of the `gpuwatch` command line."""
