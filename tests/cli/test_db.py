"""`harnessed db upgrade` and `harnessed db status` on a real PostgreSQL schema."""

from __future__ import annotations

import psycopg
import pytest

from harnessed.cli import main
from harnessed.stores.postgres import MIGRATIONS, SCHEMA_VERSION
from tests.support.postgres import URL


def printed(capsys: pytest.CaptureFixture[str]) -> str:
    return " ".join(capsys.readouterr().out.split())  # the console wraps long lines


def test_status_then_upgrade_then_status(schema: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--url", URL, "--schema", schema]
    assert main(["db", "status", *args]) == 3
    out = capsys.readouterr().out
    assert f"version 0, this harnessed needs {SCHEMA_VERSION}" in out
    assert all(f"pending {m.version}: {m.description}" in out for m in MIGRATIONS)

    assert main(["db", "upgrade", *args]) == 0
    out = printed(capsys)
    assert "applied migrations 1, 2" in out
    assert main(["db", "upgrade", *args]) == 0  # again: nothing to do
    assert "applied" not in printed(capsys)
    assert main(["db", "status", *args]) == 0
    assert "pending" not in printed(capsys)
    with psycopg.connect(URL) as conn:
        rows = conn.execute(f"SELECT version FROM {schema}.harnessed_schema ORDER BY 1").fetchall()
    assert [r[0] for r in rows] == [m.version for m in MIGRATIONS]


def test_a_newer_schema_is_refused(schema: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--url", URL, "--schema", schema]
    assert main(["db", "upgrade", *args]) == 0
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {schema}.harnessed_schema (version, description) VALUES (999, 'x')"
        )
    capsys.readouterr()
    assert main(["db", "status", *args]) == 3
    assert "newer than this harnessed" in printed(capsys)
    assert main(["db", "upgrade", *args]) == 1
    assert "newer than the" in printed(capsys)


def test_bad_arguments_are_clear(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HARNESSED_DATABASE_URL", raising=False)
    assert main(["db", "upgrade"]) == 2
    assert "--url" in printed(capsys)
    assert main(["db", "status", "--url", URL, "--schema", "Bad-Name"]) == 2
    assert "schema must be lower-case" in printed(capsys)
    assert main(["db", "status", "--url", "postgresql://nobody@127.0.0.1:1/none"]) == 1
    assert "database error" in printed(capsys)
