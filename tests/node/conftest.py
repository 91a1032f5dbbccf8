import sys
from pathlib import Path

# The node tests import their helpers (kraft_harness, kraft_datadriven, ...) as plain modules.
sys.path.insert(0, str(Path(__file__).resolve().parent))
