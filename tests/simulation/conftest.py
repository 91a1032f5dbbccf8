import sys
from pathlib import Path

# The simulation tests import their helpers (sim_helpers) as plain modules.
sys.path.insert(0, str(Path(__file__).resolve().parent))
