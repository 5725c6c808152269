"""One module per command, each defining `command`; cli.COMMANDS maps names to them."""
