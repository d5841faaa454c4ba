"""The inspector's page in a real headless browser (chromium through Selenium), served by
the real server over a database that real runs in other processes write."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from web_harness import read_line, serving, start_scene, stop, wait_for
from web_runs import HOSTILE, ODD, THREADS

from weft.persist import SQLiteBackend
from weft.store.records import RunRecord

Screenshot = Callable[[str], Path]


def open_page(browser: Any, url: str, thread: str, tab: str) -> None:
    browser.get(f"{url}#thread={thread}&tab={tab}")
    wait_for("the page to load its threads", lambda: threads_shown(browser))


def threads_shown(browser: Any) -> list[str]:
    return [
        li.get_attribute("data-thread")
        for li in browser.find_elements(By.CSS_SELECTOR, "#threads li")
    ]


def attributes(browser: Any, selector: str, name: str) -> list[str]:
    """The ``data-<name>`` of every element ``selector`` finds, read in one step (the page
    may redraw between two calls of the driver)."""
    found: list[str] = browser.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map((e) => e.dataset[arguments[1]])",
        selector,
        name,
    )
    return found


def cells(browser: Any, selector: str) -> list[list[str]]:
    return [
        [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        for row in browser.find_elements(By.CSS_SELECTOR, selector)
    ]


def test_the_page_shows_threads_runs_timeline_state_diff_and_memory(
    db: Path, browser: Any, screenshot: Screenshot
) -> None:
    with serving(db) as where:
        open_page(browser, where.url(), "research", "runs")
        assert set(threads_shown(browser)) == THREADS
        nodes = wait_for(
            "the run's nodes",
            lambda: browser.find_elements(By.CSS_SELECTOR, "[data-run='research-1'] .node"),
        )
        assert [(n.get_attribute("data-unit"), n.get_attribute("data-status")) for n in nodes] == [
            ("research#0", "finished"),
            ("summarise#1", "finished"),
        ]
        assert "ms" in nodes[0].text  # its timing
        screenshot("runs")

        browser.find_element(By.CSS_SELECTOR, "#tabs [data-tab='timeline']").click()
        rows = wait_for("the timeline", lambda: cells(browser, "#timeline-table tbody tr"))
        assert [row[0] for row in rows] == [str(n) for n in range(8, 0, -1)]
        assert rows[-1][4] == "input:topic"
        screenshot("timeline")

        # a click on a step of the timeline shows the state there, with its diff
        browser.find_element(By.CSS_SELECTOR, "#timeline-table tr[data-step='8']").click()
        diff = wait_for("the diff of step 8", lambda: cells(browser, "#diff-table tbody tr"))
        assert diff == [["state:plan", "changed", "A", "B"]]
        state = {row[0]: row[1] for row in cells(browser, "#state-table tbody tr")}
        assert state["state:plan"] == "B"
        assert state["shared:finding"] == '{\n  "fact": "otters hold hands"\n}'
        screenshot("state")

        step = browser.find_element(By.ID, "state-step")
        step.send_keys(Keys.CONTROL, "a")
        step.send_keys("7", Keys.ENTER)
        wait_for(
            "the state at step 7",
            lambda: cells(browser, "#diff-table tbody tr") == [["state:plan", "added", "", "A"]],
        )
        state = {row[0]: row[1] for row in cells(browser, "#state-table tbody tr")}
        assert state["state:plan"] == "A"

        browser.find_element(By.CSS_SELECTOR, "#tabs [data-tab='memory']").click()
        finding = wait_for(
            "the memory panel",
            lambda: browser.find_element(
                By.CSS_SELECTOR, "#panel-memory tr[data-key='shared:finding']"
            ),
        )
        assert finding.find_element(By.CLASS_NAME, "title").text == "Key finding"
        assert "otters" in finding.find_element(By.CLASS_NAME, "description").text
        assert finding.find_element(By.CLASS_NAME, "source").text == "researcher"
        assert finding.find_element(By.CLASS_NAME, "size").text == "28 B"
        screenshot("memory")

        browser.find_element(By.CSS_SELECTOR, "#tabs [data-tab='forks']").click()
        fork = wait_for("the forks", lambda: browser.find_element(By.CSS_SELECTOR, "#fork-list li"))
        assert fork.get_attribute("data-thread") == "research-fork"
        assert "at step 7" in fork.text


def test_what_a_model_wrote_is_shown_as_text_never_run(
    db: Path, browser: Any, screenshot: Screenshot
) -> None:
    with serving(db) as where:
        browser.get(where.url())
        wait_for("the threads", lambda: threads_shown(browser))
        browser.find_element(By.CSS_SELECTOR, f'#threads li[data-thread="{ODD}"]').click()
        browser.find_element(By.CSS_SELECTOR, "#tabs [data-tab='memory']").click()
        title = wait_for(
            "the hostile title",
            lambda: browser.find_element(
                By.CSS_SELECTOR, "#panel-memory tr[data-key='shared:odd'] .title"
            ),
        )
        assert title.text == HOSTILE
        assert browser.find_elements(By.CSS_SELECTOR, "#panel-memory img") == []
        assert browser.title == "weft inspector"
        assert f"thread={quote(ODD, safe='')}" in browser.current_url.replace("+", "%20")
        screenshot("hostile")


def test_the_memory_panel_updates_live_while_another_process_writes(
    db: Path, browser: Any, screenshot: Screenshot
) -> None:
    writer = start_scene("writer", str(db), "live", "4", "0.5")
    try:
        assert read_line(writer, timeout=30) == "wrote 0"
        with serving(db) as where:
            open_page(browser, where.url(), "live", "memory")
            wait_for(
                "the first note",
                lambda: browser.find_elements(
                    By.CSS_SELECTOR, "#panel-memory tr[data-key='shared:note-0']"
                ),
            )
            lags = []
            for n in range(1, 4):
                assert read_line(writer, timeout=30) == f"wrote {n}"
                written = time.monotonic()
                row = wait_for(
                    f"note {n} in the memory panel",
                    lambda n=n: browser.find_elements(
                        By.CSS_SELECTOR, f"#panel-memory tr[data-key='shared:note-{n}']"
                    ),
                    timeout=5,
                    every=0.02,
                )
                lags.append(time.monotonic() - written)
                assert row[0].find_element(By.CLASS_NAME, "title").text == f"Note {n}"
                assert row[0].find_element(By.CLASS_NAME, "source").text == "live-writer"
            screenshot("live-memory")
            # a second or two; more only on a machine too loaded to draw the page
            assert sorted(lags)[1] < 2.0, f"the panel lagged the writer by {lags} seconds"
            assert max(lags) < 3.0, f"the panel lagged the writer by {lags} seconds"
            browser.find_element(By.CSS_SELECTOR, "#tabs [data-tab='timeline']").click()
            newest = store_steps(db, "live")
            wait_for(
                "the timeline up to the last write",
                lambda: browser.find_elements(
                    By.CSS_SELECTOR, f"#timeline-table tr[data-step='{newest}']"
                ),
            )
    finally:
        stop(writer)


def test_an_answer_in_the_page_resumes_the_paused_run(
    db: Path, browser: Any, screenshot: Screenshot
) -> None:
    waiter = start_scene("waiter", str(db), "approval", "approve-1", "60")
    try:
        line = read_line(waiter, timeout=30)
        assert line == "paused approve-1/review#1/pauses/0"
        with serving(db, allow_writes=True) as where:
            open_page(browser, where.url(), "approval", "pauses")
            form = wait_for(
                "the question's form",
                lambda: browser.find_element(By.CSS_SELECTOR, ".pause .answer-form"),
            )
            assert "herons wait" in browser.find_element(By.CSS_SELECTOR, ".question").text
            form.find_element(By.TAG_NAME, "textarea").send_keys("yes")
            screenshot("question")
            form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
            assert read_line(waiter, timeout=30) == "done published: Summary: herons wait"
            wait_for(
                "the pause shown answered",
                lambda: browser.find_elements(By.CSS_SELECTOR, ".pause.answered .answer"),
            )
            screenshot("answered")
            # the run's own process finished it: the page follows, through the live feed
            browser.find_element(By.CSS_SELECTOR, "#tabs [data-tab='runs']").click()
            steps = store_steps(db, "approval")
            wait_for(
                "the run shown completed, every unit finished",
                lambda: (
                    attributes(
                        browser, "[data-run='approve-1'][data-status='completed'] .node", "status"
                    )
                    == ["finished"] * 3
                ),
            )
            wait_for(
                "the thread's last step in the list",
                lambda: (
                    attributes(browser, "#threads li[data-thread='approval']", "step")
                    == [str(steps)]
                ),
            )
            screenshot("completed")
        with SQLiteBackend(db) as backend:
            store = backend.load("approval").to_store()
        run = store.value("step", "approve-1")
        assert isinstance(run, RunRecord)
        assert run.status == "completed"
        assert store.value("step", "approve-1/publish#2").result == (
            "published: Summary: herons wait"
        )
    finally:
        stop(waiter)


def store_steps(db: Path, thread: str) -> int:
    with SQLiteBackend(db) as backend:
        return backend.last_step(thread)


def test_read_only_mode_refuses_the_form(db: Path, browser: Any, screenshot: Screenshot) -> None:
    with serving(db) as where:
        open_page(browser, where.url(), "review", "pauses")
        form = wait_for(
            "the question's form",
            lambda: browser.find_element(By.CSS_SELECTOR, ".pause .answer-form"),
        )
        assert browser.find_element(By.ID, "mode").text == "read-only"
        assert "--allow-writes" in browser.find_element(By.ID, "read-only-note").text
        assert not form.find_element(By.CSS_SELECTOR, "button[type=submit]").is_enabled()
        screenshot("read-only")
        # the server refuses too, whatever the page does
        status, message = browser.execute_async_script(
            """
            const done = arguments[arguments.length - 1];
            fetch('/api/threads/review/answer', {method: 'POST',
              headers: {'Content-Type': 'application/json'},
              body: JSON.stringify({id: 'review-1/review#1/pauses/0', answer: 'yes'})})
              .then(async (r) => done([r.status, (await r.json()).error]));
            """
        )
        assert status == 403
        assert "read-only" in message
    with SQLiteBackend(db) as backend:
        pause = backend.load("review").to_store().value("step", "review-1/review#1/pauses/0")
    assert pause.answered is False


def test_a_bind_beyond_loopback_shows_nothing_without_the_token(
    db: Path, browser: Any, screenshot: Screenshot
) -> None:
    with serving(db, host="0.0.0.0", token="page-token-123") as where:
        base = f"http://127.0.0.1:{where.port}/"
        browser.delete_all_cookies()
        browser.get(base)
        error = wait_for("the refusal", lambda: browser.find_element(By.ID, "error").text or None)
        assert "token" in error
        assert threads_shown(browser) == []
        screenshot("no-token")
        open_page(browser, f"{base}?token=page-token-123", "research", "runs")
        assert "research" in threads_shown(browser)
        browser.get(base)  # the cookie the first visit set
        wait_for("the threads again", lambda: threads_shown(browser))
        browser.delete_all_cookies()
