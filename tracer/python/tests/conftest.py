"""The tests import the worker package from the source tree, as the launcher does from its directory."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
