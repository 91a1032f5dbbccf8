import sys

from kraftwire.cli import main

sys.exit(main())
