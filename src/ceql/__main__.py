"""``python -m ceql`` runs the command line."""

import sys

from ceql.cli import main

sys.exit(main())
