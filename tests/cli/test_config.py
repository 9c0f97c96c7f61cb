"""``harnessed.toml``: defaults from the project and the user; flags win; bad files named."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessed.cli import main
from harnessed.cli.config import CliConfig, ConfigError, load_config, model_spec
from tests.cli.test_run import chunk
from tests.support.http_server import LocalServer, Reply


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    project, user = tmp_path / "project", tmp_path / "config"
    project.mkdir()
    (user / "harnessed").mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user))
    monkeypatch.delenv("HARNESSED_MODEL", raising=False)
    monkeypatch.chdir(project)
    return project, user / "harnessed"


def test_project_over_user_env_over_files_flag_over_all(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, user = places
    (user / "harnessed.toml").write_text(
        'model = "openai:user-model"\nbase_url = "http://user/v1"\nsandbox = "none"\n'
    )
    (project / "harnessed.toml").write_text('model = "openai:project-model"\n')
    config = load_config()
    assert config == CliConfig("openai:project-model", "http://user/v1", None, "none")
    assert model_spec(None, config) == "openai:project-model"
    monkeypatch.setenv("HARNESSED_MODEL", "openai:env-model")
    assert model_spec(None, config) == "openai:env-model"
    assert model_spec("openai:flag-model", config) == "openai:flag-model"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('modle = "openai:x"\n', "modle"),
        ('permission_mode = "yolo"\n', "permission_mode"),
        ('sandbox = "docker"\n', "sandbox"),
        ('model = "gpt-4"\n', "provider:model"),
        ("model = 3\n", "model"),
        ("model = \n", "harnessed.toml"),
    ],
)
def test_a_bad_file_is_refused_naming_it_and_the_key(
    places: tuple[Path, Path], text: str, named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    project, _ = places
    (project / "harnessed.toml").write_text(text)
    with pytest.raises(ConfigError) as error:
        load_config()
    assert named in str(error.value) and str(project) in str(error.value)
    assert main(["run", "hi"]) == 2  # the command says so and stops
    assert named in capsys.readouterr().out


def test_run_takes_the_model_and_server_from_the_file(
    places: tuple[Path, Path],
    http_server: LocalServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project, _ = places
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    (project / "harnessed.toml").write_text(
        f'model = "openai:from-file"\nbase_url = "{http_server.url}/v1"\n'
    )
    http_server.queue(Reply(sse=[chunk({"content": "Configured."}, "stop"), "data: [DONE]\n\n"]))
    assert main(["run", "hello", "--workspace", str(tmp_path / "ws")]) == 0
    assert "Configured." in capsys.readouterr().out
    assert http_server.requests[0].json()["model"] == "from-file"


def test_run_loads_an_application_agent(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CHAT_TEST_WORKSPACE", str(tmp_path))
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    assert main(["run", "hello there", "--agent", "tests.cli.chat_app:make_agent"]) == 0
    assert "You said: hello there" in capsys.readouterr().out


def test_yes_lets_a_loaded_agents_tools_run_without_asking(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the application's agent asks before `deploy` (permission_mode="default"); --yes wins
    monkeypatch.setenv("CHAT_TEST_WORKSPACE", str(tmp_path))
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    assert main(["run", "deploy prod", "--agent", "tests.cli.chat_app:make_agent", "--yes"]) == 0
    assert "Finished after: deployed to prod" in capsys.readouterr().out
