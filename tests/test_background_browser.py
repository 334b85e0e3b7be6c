"""Step 4's live background in a real browser: headless Chromium (Debian's), driven by Playwright.

It starts `python -m common.background step-04` on a free localhost port, opens the topic list
and one topic, and checks that every cell rendered and ran (their printed output is the script's),
that a cell edited and run shows its new output, and that no request left localhost. It saves a
screenshot to out/test-background/step-04.png. Without /usr/bin/chromium it skips.
"""

import re
import time
from pathlib import Path

import pytest

from common import OUT_DIR, background
from tests.background_server import Server, repo_state, session_processes

CHROMIUM = Path("/usr/bin/chromium")  # Debian's package; `.ci/run` installs it
SCREENSHOT = OUT_DIR / "test-background" / "step-04.png"
# Chromium on a closed network: no sandbox as root, and none of its own calls home.
FLAGS = "--no-sandbox --disable-gpu --disable-quic --no-first-run --disable-sync".split()
FLAGS += ["--disable-background-networking", "--disable-component-update"]
TOPIC = "02_embedding_buffers.py"  # its cells import torch
EDIT = 'print("edited:", torch.arange(4).sum().item())'
WAIT_MS = 60_000  # for the kernel to start (it imports torch) and the cells to run

playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


def local(url: str, port: int) -> bool:
    return re.match(rf"(http|ws)://(127\.0\.0\.1|localhost):{port}(/|$)", url) is not None


def until(page, read, done):
    """read() once done(it) holds, or as it is after WAIT_MS (Playwright keeps routing meanwhile)."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while not done(value := read()) and time.monotonic() < deadline:
        page.wait_for_timeout(500)  # not time.sleep: Playwright must keep routing requests
    return value


@pytest.mark.process
@pytest.mark.slow  # a server, a kernel that imports torch, and a browser: about 10-15 s
@pytest.mark.timeout(240)
@pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (apt-get install chromium)"
)
def test_step_04_background_runs_and_edits_in_a_browser_offline(tmp_path):
    before = repo_state()
    server = Server(workspace=tmp_path / "workspace")
    requests: list[str] = []
    try:
        url = server.url()
        port = int(re.search(r":(\d+)/", url)[1])
        with playwright.sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                tmp_path / "profile",  # a fresh profile
                executable_path=str(CHROMIUM),
                headless=True,
                args=FLAGS,
                viewport={"width": 1100, "height": 1600},
                # marimo's service worker only adds a header to /public/ requests of the same
                # origin (marimo/_server/api/endpoints/assets.py); routed requests hang behind it.
                service_workers="block",
            )

            def route(r):
                requests.append(r.request.url)
                r.continue_() if local(r.request.url, port) else r.abort()

            def route_ws(ws):
                requests.append(ws.url)
                ws.connect_to_server() if local(ws.url, port) else ws.close()

            context.route("**/*", route)
            context.route_web_socket(re.compile(".*"), route_ws)
            page = context.new_page()
            page.set_default_timeout(WAIT_MS)

            # the home page lists every topic of the step
            page.goto(url)
            for topic in background.topics("step-04"):
                page.get_by_text(topic.name, exact=True).first.wait_for()

            # one topic: every cell is there, and together they print what the script prints
            page.goto(url.replace("/?", f"/?file={TOPIC}&"))
            source = (background.STEPS_DIR / "step-04" / "background" / TOPIC).read_text("utf-8")
            n_cells = source.count("\n@app.cell") + ("\nwith app.setup:" in source)
            cells = page.locator("[data-cell-id]")
            expected = background.output(background.STEPS_DIR / "step-04" / "background" / TOPIC)
            outputs = page.locator('[data-testid="console-output-area"]')
            printed = until(page, lambda: "".join(outputs.all_inner_texts()), expected.__eq__)
            assert cells.count() == n_cells
            assert printed == expected, (
                f"the cells printed:\n{printed}\nthe script prints:\n{expected}"
            )
            page.locator("h1").first.wait_for()  # the prose rendered as markdown
            title = re.search(r"^    # (.+)$", source, re.M)[1].replace("`", "")
            assert page.locator("h1").first.inner_text().strip() == title

            # edit the last cell (nothing depends on it) and run it
            last = cells.nth(n_cells - 1)
            last.locator(".cm-content").click()
            page.keyboard.press("Control+a")
            page.keyboard.insert_text(EDIT)
            page.keyboard.press("Control+Enter")
            last.get_by_text("edited: 6").wait_for()
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=SCREENSHOT, full_page=True)

            # Ctrl-S saves the edit to the copy marimo serves, not to the repository
            page.keyboard.press("Control+s")
            copy = tmp_path / "workspace" / "step-04" / TOPIC
            assert EDIT in until(page, lambda: copy.read_text("utf-8"), lambda text: EDIT in text)
            context.close()
        assert server.interrupt() == 0
    finally:
        server.close()

    outside = [u for u in requests if not local(u, port)]
    assert requests and not outside, f"requests that left localhost: {outside}"
    if Path("/proc/self/stat").exists():
        assert session_processes(server.proc.pid) == [], "the server or its kernel survived"
    assert repo_state() == before, "the server wrote into the repository"
