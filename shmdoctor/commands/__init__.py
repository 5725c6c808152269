"""One module per command, each defining `command`; cli.COMMANDS lists them."""
