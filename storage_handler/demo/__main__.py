"""``python -m storage_handler.demo`` runs the demo."""

import sys

from storage_handler.cli.main import main

sys.exit(main(["demo", *sys.argv[1:]]))
