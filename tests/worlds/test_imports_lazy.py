"""The importers load when asked for: reading lore's keys (every story command that reads
lore does) runs ``fabula.worlds.imports`` first, which must not load every importer."""

from __future__ import annotations

import json
import subprocess
import sys

import fabula.worlds.imports as imports
from fabula.worlds.imports.assemble import import_paths
from fabula.worlds.imports.limits import ImportLimits


def test_the_package_names_resolve_to_their_homes() -> None:
    assert imports.import_paths is import_paths
    assert imports.ImportLimits is ImportLimits
    assert callable(imports.write_pack)


def test_reading_keys_loads_no_importer() -> None:
    code = (
        "import json, sys\n"
        "import fabula.worlds.imports.keys\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('fabula.worlds.'))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = json.loads(proc.stdout)
    assert "fabula.worlds.imports.keys" in loaded
    heavy = ("assemble", "cards", "lorebooks", "bookworld", "packdir")
    assert [m for m in loaded if m.rpartition(".")[2] in heavy] == []
