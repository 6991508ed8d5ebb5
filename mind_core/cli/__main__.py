import sys

from mind_core.cli import main

sys.exit(main())
