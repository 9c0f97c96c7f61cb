"""``harnessed worker``: what it says when it cannot start (a running worker is tested with a
dev server in tests/temporal)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessed.cli.main import main
from tests.support.fixtures import free_port


def test_an_unreachable_server_stops_the_worker_with_a_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HARNESSED_TEST_WORKSPACE", str(tmp_path))
    monkeypatch.delenv("HARNESSED_TEST_TEMPORAL", raising=False)
    address = f"127.0.0.1:{free_port()}"
    code = main(
        [
            "worker",
            "--agent",
            "tests.support.temporal_app:agent",
            "--temporal",
            address,
            "--task-queue",
            "q",
        ]
    )
    assert code == 1
    out = capsys.readouterr().out
    assert "cannot work with Temporal" in out and address in out


@pytest.mark.parametrize(
    ("spec", "said"),
    [("no_such_module_xyz:agent", "cannot import"), ("json:dumps", "is not a HarnessAgent")],
)
def test_an_agent_spec_that_is_not_an_agent_is_refused(
    spec: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["worker", "--agent", spec, "--temporal", "127.0.0.1:1", "--task-queue", "q"])
    assert code == 2
    assert said in capsys.readouterr().out


def test_limits_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(
            [
                "worker",
                "--agent",
                "a:b",
                "--temporal",
                "127.0.0.1:1",
                "--task-queue",
                "q",
                "--max-per-user",
                "0",
            ]
        )
    assert "must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[[channel]]\ntype = "pigeon"\n', "pigeon"),
        (
            '[[channel]]\ntype = "webhook"\nsecret = "short"\ncallback_url = "http://x/cb"\n',
            "secret",
        ),
    ],
)
def test_a_channels_file_that_cannot_be_loaded_is_refused_before_connecting(
    text: str,
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HARNESSED_TEST_WORKSPACE", str(tmp_path))
    monkeypatch.delenv("HARNESSED_TEST_TEMPORAL", raising=False)
    channels = tmp_path / "channels.toml"
    channels.write_text(text)
    code = main(
        [
            "worker",
            "--agent",
            "tests.support.temporal_app:agent",
            "--temporal",
            f"127.0.0.1:{free_port()}",
            "--task-queue",
            "q",
            "--channels",
            str(channels),
        ]
    )
    assert code == 2
    out = capsys.readouterr().out
    assert "cannot load the channels" in out and said in out
