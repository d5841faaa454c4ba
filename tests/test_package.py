"""The package as a whole: public names are a contract, and importing weft stays light."""

from __future__ import annotations

import subprocess
import sys

import weft.store


def test_store_public_names_are_pinned() -> None:
    assert weft.store.__all__ == [
        "DELETE",
        "KINDS",
        "MAX_DEPTH",
        "MISSING",
        "NOT_DONE",
        "BatchSubscriber",
        "CallIntent",
        "Delta",
        "Entry",
        "Event",
        "FrozenDict",
        "FrozenList",
        "Journal",
        "Kind",
        "Note",
        "Op",
        "Pause",
        "RunLog",
        "RunRecord",
        "StepRecord",
        "Store",
        "Subscriber",
        "TypeRegistry",
        "dumps",
        "freeze",
        "from_jsonable",
        "loads",
        "make_key",
        "reducers",
        "register_type",
        "registry",
        "thaw",
        "to_jsonable",
        "value_bytes",
    ]
    for name in weft.store.__all__:
        assert hasattr(weft.store, name), name


def test_import_weft_does_not_pull_in_cli_or_network_dependencies() -> None:
    code = (
        "import sys, weft, weft.store; "
        "heavy = [m for m in ('rich', 'typer', 'httpx', 'jsonschema', 'pydantic') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
