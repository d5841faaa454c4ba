"""Fixtures of the web inspector's tests (see web_harness.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from web_harness import ARTIFACTS, CHROMEDRIVER, CHROMIUM, run_scene


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A SQLite file seeded by ``web_runs.py seed`` (see web_runs.py)."""
    path = tmp_path / "weft.db"
    run_scene("seed", str(path))
    return path


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless chromium for the session (Selenium, no driver or browser download)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for path in (CHROMIUM, CHROMEDRIVER):
        assert Path(path).exists(), (
            f"{path} is missing: install Debian's browser with "
            "`apt-get install -y chromium chromium-driver` (or set WEFT_CHROMIUM / "
            "WEFT_CHROMEDRIVER)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1000",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(20)
    driver.set_script_timeout(10)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def screenshot(browser: Any, request: pytest.FixtureRequest) -> Callable[[str], Path]:
    """``screenshot(name)`` saves the page as test-artifacts/inspect_web/<test>-<name>.png."""

    def take(name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{request.node.name}-{name}.png"
        assert browser.save_screenshot(str(path)), f"no screenshot saved at {path}"
        return path

    return take
