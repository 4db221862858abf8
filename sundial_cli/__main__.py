"""``python -m sundial_cli``: the same as ``sundial``."""

from sundial_cli.main import main

main()
