"""``harnessed serve``: a real server process for an application's agent, tokens required."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from harnessed.cli import main
from harnessed.cli.serve import parse_time_slice, parse_tokens
from tests.cli.chat_app import harnessed_process
from tests.gateway.helpers import sse
from tests.support.fixtures import free_port, free_socket

ROOT = Path(__file__).resolve().parents[2]


def test_serve_runs_the_app_with_uvicorn(tmp_path: Path) -> None:
    port = free_port()
    proc = harnessed_process(
        tmp_path,
        "serve",
        "--agent",
        "tests.cli.chat_app:make_agent",
        "--token",
        "first-token-1=alice",
        "--port",
        str(port),
        env={"HARNESSED_TOKENS": "second-token-1=bob"},
    )
    url = f"http://127.0.0.1:{port}"
    alice = {"Authorization": "Bearer first-token-1"}
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/openapi.json").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        assert httpx.get(f"{url}/v1/agents").status_code == 401
        assert httpx.get(f"{url}/v1/agents", headers=alice).json()["agents"] == ["chatty"]
        bob = {"Authorization": "Bearer second-token-1"}
        assert httpx.get(f"{url}/v1/sessions", headers=bob).status_code == 200
        httpx.post(f"{url}/v1/sessions", json={"session_id": "a"}, headers=alice)
        r = httpx.post(f"{url}/v1/sessions/a/messages", json={"text": "hi"}, headers=alice)
        assert sse(r.text)[-1][1]["reply"]["content"][0]["text"] == "You said: hi"
        assert "text/html" in httpx.get(f"{url}/").headers["content-type"]
    finally:
        proc.terminate()
        proc.wait(20)


def test_serve_refuses_to_start_without_tokens(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.delenv("HARNESSED_TOKENS", raising=False)
    monkeypatch.setenv("CHAT_TEST_WORKSPACE", str(tmp_path))
    assert main(["serve", "--agent", "tests.cli.chat_app:make_agent"]) == 2
    assert "no way to authenticate" in capsys.readouterr().out
    assert main(["serve", "--agent", "tests.cli.nothing_here:x", "--token", "t" * 9 + "=a"]) == 2
    assert "cannot import" in capsys.readouterr().out


def test_token_pairs_are_parsed_and_checked() -> None:
    assert parse_tokens(["tok-aaaa=alice"], {"HARNESSED_TOKENS": "b-token-1=bob, c-token-1=c"}) == {
        "tok-aaaa": "alice",
        "b-token-1": "bob",
        "c-token-1": "c",
    }
    with pytest.raises(ValueError, match="TOKEN=USER"):
        parse_tokens(["just-a-token"], {})


def test_time_slice_is_set_for_the_server_or_refused_clearly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import uvicorn

    from harnessed.run import DEFAULT_TIME_SLICE, set_time_slice, time_slice

    monkeypatch.setenv("CHAT_TEST_WORKSPACE", str(tmp_path))
    served: list[float | None] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, **kw: served.append(time_slice()))
    base = ["serve", "--agent", "tests.cli.chat_app:make_agent", "--token", "first-token-1=a"]
    try:
        assert main([*base, "--time-slice", "0.005"]) == 0
        assert main([*base, "--time-slice", "off"]) == 0
        assert served == [0.005, None]
        for bad in ("fast", "0", "-1", "inf"):
            assert main([*base, "--time-slice", bad]) == 2
            assert "--time-slice must be" in capsys.readouterr().out
    finally:
        set_time_slice(DEFAULT_TIME_SLICE)
    assert parse_time_slice(" OFF ") is None


def test_serve_demo_needs_no_key_and_makes_up_a_token(tmp_path: Path) -> None:
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    proc = harnessed_process(
        tmp_path,
        "serve",
        "--demo",
        "--port",
        str(port),
        env={"HARNESSED_TOKENS": "", "OPENAI_API_KEY": "", "XDG_DATA_HOME": str(tmp_path)},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        while "demo token" not in line:
            assert line, "the server ended before printing its token"
            line = proc.stdout.readline()
        token = line.split("demo token (user demo): ", 1)[1].split()[0]
        for _ in range(600):
            try:
                if httpx.get(f"{url}/openapi.json").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        auth = {"Authorization": f"Bearer {token}"}
        assert httpx.get(f"{url}/v1/agents", headers=auth).json()["agents"] == ["demo"]
        httpx.post(f"{url}/v1/sessions", json={"session_id": "d"}, headers=auth)
        tools, reply = [], ""
        with httpx.stream(
            "POST",
            f"{url}/v1/sessions/d/messages",
            json={"text": "fix the bug"},
            headers=auth,
            timeout=120,
        ) as stream:
            for line in stream.iter_lines():
                if not line.startswith("data: "):
                    continue
                data = json.loads(line[6:])
                if data.get("type") == "tool_call":
                    tools.append(data["call"]["name"])
                elif data.get("type") == "confirmation_request":  # the demo runs tests: asks
                    answered = httpx.post(
                        f"{url}/v1/sessions/d/confirmations/{data['request_id']}",
                        json={"approved": True},
                        headers=auth,
                    )
                    assert answered.status_code == 204
                elif data.get("type") == "agent_end":
                    reply = data["reply"]["content"][0]["text"]
                    break
        assert "edit_file" in tools and "execute" in tools
        assert "after the fix the tests pass" in reply
    finally:
        proc.terminate()
        proc.wait(20)
