"""Open a page in headless Chromium through ChromeDriver, as Selenium does (the W3C WebDriver protocol over HTTP on
loopback, Python's standard library only), and take its screenshot: the page rendered whole. Prints 'screenshot N
bytes' and exits 0, or prints ChromeDriver's error message as Selenium's WebDriverException says it ('Message: tab
crashed', its session info below) and exits 1.

    python3 webdriver_page.py URL [CHROMIUM_SWITCH ...]
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

CHROMIUM = "/usr/lib/chromium/chromium"  # the browser itself: Debian's /usr/bin/chromium wrapper adds switches
DRIVER = "/usr/bin/chromedriver"
SWITCHES = ["--headless", "--no-sandbox", "--disable-gpu", "--window-size=4000,16000"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base: str, method: str, path: str, body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return json.load(response)["value"]
    except urllib.error.HTTPError as error:  # WebDriver's errors: {"value": {"error": ..., "message": ...}}
        value = json.load(error)["value"]
        raise RuntimeError(f"Message: {value['message']}") from None


def main(url: str, extra: list[str]) -> int:
    port = free_port()
    driver = subprocess.Popen([DRIVER, f"--port={port}"], stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):  # until it listens
            try:
                call(base, "GET", "/status")
                break
            except (OSError, RuntimeError):
                time.sleep(0.1)
        options = {"binary": CHROMIUM, "args": SWITCHES + extra}
        capabilities = {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": options}}
        session = call(base, "POST", "/session", {"capabilities": capabilities})["sessionId"]
        try:
            call(base, "POST", f"/session/{session}/url", {"url": url})
            shot = base64.b64decode(call(base, "GET", f"/session/{session}/screenshot"))
            print(f"screenshot {len(shot)} bytes", flush=True)
        finally:
            with contextlib.suppress(OSError, RuntimeError):  # a crashed browser may not answer
                call(base, "DELETE", f"/session/{session}")
        return 0
    except RuntimeError as error:
        print(f"webdriver_page.py: {error}", file=sys.stderr, flush=True)
        return 1
    finally:
        driver.terminate()
        driver.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
