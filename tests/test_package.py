"""The package as a whole: public names are a contract, and importing weft stays light."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

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
        "CallNote",
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
        "RunNote",
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
        "tap",
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


def test_a_users_mypy_type_checks_code_that_uses_weft(tmp_path: Path) -> None:
    """``py.typed`` ships, so a user's ``mypy --strict`` reads weft's types (without it,
    every import of weft is ``import-untyped``)."""
    user = tmp_path / "user.py"
    user.write_text(
        "from weft.store import Store\n"
        "store = Store()\n"
        "store.write('state', 'x', 1)\n"
        "n: int = store.fork()\n"  # a Store is not an int: mypy must know Store's types
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(user)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "import-untyped" not in done.stdout, done.stdout
    assert 'Incompatible types in assignment (expression has type "Store"' in done.stdout


def test_the_package_states_the_python_versions_it_is_tested_on() -> None:
    meta = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    project = meta["project"]
    assert project["requires-python"] == ">=3.11"
    versions = [
        c.rsplit(" ", 1)[1]
        for c in project["classifiers"]
        if c.count("::") == 2 and "Python :: 3." in c
    ]
    assert versions == ["3.11", "3.12", "3.13"]
    assert "Typing :: Typed" in project["classifiers"]
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    installs, suites = (
        loop.split() for loop in re.findall(r"^for version in ([\d. ]+); do$", ci, re.M)
    )
    assert installs == versions, "CI must install weft for every stated version"
    assert suites == versions[1:], "CI must run the suite on every stated version"
    assert '".venv-$version/bin/pytest"' in ci
