"""Subcommands of the dlscale command line, one module each."""
